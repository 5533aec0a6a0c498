"""The daemon's MCP servers over its life: the admin room hears when one goes down and when it is back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.backoff import Backoff
from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.daemon.mcp import MCPLifecycle, notice_text
from mindroom.hooks.registry import HookRegistry
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from mindroom.tool_system.mcp.connection import ServerStatus
from mindroom.tool_system.mcp.servers import MCPServerPool
from tests.integration.mcp_servers import time_server_command


def test_mcp_notice_says_which_server_and_why_without_secrets():
    down = notice_text(ServerStatus("clock", "failed", "token=abcdef123456 refused"))
    assert down.startswith("⚠️ MCP server clock is unavailable: token=[redacted] refused")
    assert notice_text(ServerStatus("clock", "ready", tools=2)) == "✅ MCP server clock is available again (2 tools)."


@pytest.mark.asyncio
async def test_mcp_lifecycle_announces_a_crash_and_the_recovery_once_each(tmp_path: Path):
    said: list[str] = []

    async def notify(text: str) -> None:
        said.append(text)

    config = Config.model_validate({"mcp_servers": {"clock": {"transport": "stdio", "command": time_server_command()}}})
    cell = LiveCell(LiveState(config=config, registry=HookRegistry.empty()))
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    pool = MCPServerPool(retry=Backoff(0.2, 0.5))
    lifecycle = MCPLifecycle(
        cell, Directory("localhost", SqliteRoomMemory(tmp_path / "rooms.db")), paths, pool, notify=notify
    )
    try:
        await lifecycle.apply(config)
        await until(lambda: [s.state for s in pool.statuses()] == ["ready"])
        assert said == []  # starting is no news

        pool.connection("clock")._mark_broken("the test broke it")  # as a call that found the connection gone
        await until(lambda: len(said) == 2)

        assert said[0].startswith("⚠️ MCP server clock is unavailable: the test broke it")
        assert said[1] == "✅ MCP server clock is available again (2 tools)."
    finally:
        await lifecycle.stop()
    assert pool.statuses() == []


async def until(condition, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_mcp_lifecycle_logs_a_notice_that_failed_to_go_out(tmp_path: Path):
    async def notify(text: str) -> None:
        raise RuntimeError("the admin room is gone")

    cell = LiveCell(LiveState(config=Config(), registry=HookRegistry.empty()))
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    pool = MCPServerPool(retry=Backoff(0.2, 0.5))
    lifecycle = MCPLifecycle(
        cell, Directory("localhost", SqliteRoomMemory(tmp_path / "rooms.db")), paths, pool, notify=notify
    )
    with capture_logs() as logs:
        assert pool.on_change is not None
        pool.on_change(ServerStatus("clock", "failed", "it crashed"))  # as the pool reports a server going down
        await until(lambda: any(entry["event"] == "background task failed" for entry in logs))
        await lifecycle.stop()

    failed = next(entry for entry in logs if entry["event"] == "background task failed")
    assert (failed["owner"], failed["what"]) == ("mcp notices", "an MCP server notice")
