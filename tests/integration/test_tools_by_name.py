"""agno toolkits by catalogue name (one whose package is missing too) and MCP servers from the package registries,
end to end on a real Synapse."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from mindroom.homeserver.synapse import free_port
from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.mcp.servers import MCPServerPool
from mindroom.tool_system.sandbox.reaper import descendants
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS
from mindroom.tool_system.toolkits import toolkit_status
from tests.integration.conftest import E2E
from tests.integration.mcp_servers import everything_server, time_server_command
from tests.integration.support import thread_replies
from tests.integration.test_tools import last_tool_message, tool_names

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
ROOT = Path(__file__).resolve().parents[2]


async def one_agent(e2e: E2E, agent_config: dict, *, extra: dict | None = None):
    """A human and one agent in one room, with `extra` top-level config (`mcp_servers`, `tool_approval`)."""
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], **agent_config}}
    await e2e.start(e2e.basic_config([human.user_id], agents, **(extra or {})))
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id


def agent_requests(e2e: E2E) -> list[dict]:
    return [request for request in e2e.model_server.requests if request.get("model") == "agent-model"]


async def wait_server(server_id: str, state: str = "ready", timeout: float = 60.0) -> None:
    pool = MCPServerPool.shared()
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        found = {status.server_id: status for status in pool.statuses()}.get(server_id)
        if found is not None and found.state == state:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"MCP server {server_id} not {state}: {pool.statuses()}")


async def ask(e2e: E2E, human, room_id: str, agent: str, text: str) -> dict:
    event_id = await human.send(room_id, text)
    return await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))


async def test_tools_an_agno_toolkit_named_in_config_answers_through_a_tool_call(e2e: E2E):
    human, agent, room_id = await one_agent(e2e, {"tools": [{"reasoning": {"enable_analyze": False}}]})
    e2e.model_server.script(
        ToolCall("think", {"title": "Plan", "thought": "Add the numbers first."}), Text("Thought it through."),
        model="agent-model",
    )  # fmt: skip

    reply = await ask(e2e, human, room_id, agent, "think before you answer")

    assert reply["content"]["body"] == "Thought it through."
    first, second = agent_requests(e2e)
    assert tool_names(first) == ["think"]  # the agent's setting turned `analyze` off
    result = last_tool_message(second)
    assert "Title: Plan" in result and "Reasoning: Add the numbers first." in result


HELD_CLOCK = """
import os, sys, time
while os.path.exists("hold"):
    time.sleep(0.05)
from mcp_server_time import main
sys.argv = ["mcp-server-time", *sys.argv[1:]]
sys.exit(main())
"""
"""The time server, started only once no file `hold` is in its working folder: a restart the test can hold."""


async def test_tools_a_stdio_mcp_server_answers_and_comes_back_after_a_crash(e2e: E2E, tmp_path: Path):
    folder = tmp_path / "clock"
    assert Path(time_server_command()).parent == Path(sys.executable).parent  # the same virtual environment
    args = ["-c", HELD_CLOCK, "--local-timezone", "UTC"]
    packages = {"PYTHONPATH": sysconfig.get_paths()["purelib"]}  # the interpreter starts outside the venv
    clock = {"transport": "stdio", "command": sys.executable, "args": args, "cwd": str(folder), "env": packages}
    servers = {"clock": clock}
    python = {"mcp": {"readonly_paths": sorted({sys.prefix, sys.base_prefix})}}  # the interpreter, where it lives
    extra = {"mcp_servers": servers, "tools": python}
    human, agent, room_id = await one_agent(e2e, {"tools": ["mcp_clock"]}, extra=extra)
    await wait_server("clock")
    call = ToolCall("clock_convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    e2e.model_server.script(call, Text("It is 21:00 in Tokyo."), model="agent-model")

    reply = await ask(e2e, human, room_id, agent, "noon UTC in Tokyo?")

    assert reply["content"]["body"] == "It is 21:00 in Tokyo."
    first, second = agent_requests(e2e)
    assert tool_names(first) == ["clock_convert_time", "clock_get_current_time"]
    assert "T21:00:00+09:00" in last_tool_message(second)

    (folder / "hold").touch()  # the restart waits until the test lets it go
    pid = MCPServerPool.shared().process_id("clock")
    assert pid is not None
    for victim in (*descendants(pid), pid):  # the server and its sandbox die at once
        os.kill(victim, signal.SIGKILL)
    await wait_server("clock", "starting")
    e2e.model_server.script(call, Text("The clock is away."), model="agent-model")

    reply = await ask(e2e, human, room_id, agent, "and now?")

    assert reply["content"]["body"] == "The clock is away."
    assert "unavailable" in last_tool_message(agent_requests(e2e)[-1])

    (folder / "hold").unlink()
    await wait_server("clock")
    e2e.model_server.script(call, Text("Back: 21:00."), model="agent-model")
    reply = await ask(e2e, human, room_id, agent, "once more")
    assert reply["content"]["body"] == "Back: 21:00."
    assert "T21:00:00+09:00" in last_tool_message(agent_requests(e2e)[-1])


@pytest.mark.parametrize(("mode", "transport"), [("streamableHttp", "streamable-http"), ("sse", "sse")])
async def test_tools_a_remote_mcp_server_answers_through_a_tool_call(e2e: E2E, mode: str, transport: str):
    with everything_server(mode) as url:
        server = {"transport": transport, "url": url, "allow_private_network": True, "tool_prefix": "ev"}
        agent_tool = {"mcp_everything": {"include_tools": ["echo", "get-sum"], "call_timeout_seconds": 20}}
        human, agent, room_id = await one_agent(
            e2e, {"tools": [agent_tool]}, extra={"mcp_servers": {"everything": server}}
        )
        await wait_server("everything")
        e2e.model_server.script(ToolCall("ev_echo", {"message": "over HTTP"}), Text("It echoed."), model="agent-model")

        reply = await ask(e2e, human, room_id, agent, "echo something")

        assert reply["content"]["body"] == "It echoed."
        first, second = agent_requests(e2e)
        assert tool_names(first) == ["ev_echo", "ev_get-sum"]
        assert last_tool_message(second) == "Echo: over HTTP"


async def test_tools_a_toolkit_missing_its_package_leaves_the_daemon_up_and_the_agent_on_its_other_tools(e2e: E2E):
    missing = next(
        name for name in ("wikipedia", "arxiv", "youtube", "newspaper")
        if toolkit_status(AGNO_TOOLKITS[name], {}).state == "missing_package"
    )  # fmt: skip
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    tools = [missing, {"reasoning": {"enable_analyze": False}}]
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room], "tools": tools}})
    port, key = free_port(), "tools-integration-key"
    daemon = e2e.spawn(config, MINDROOM_API_PORT=str(port), MINDROOM_API_KEY=key)
    daemon.start()
    await daemon.wait_for_line("daemon ready")

    fix = f"mindroom tools install {missing} (or: pip install -e '{ROOT}[tools-web]')"
    warned = [
        json.loads(line) for line in daemon.output().splitlines() if "agent runs without a tool that cannot run" in line
    ]
    assert [(w["agent"], w["tool"], w["fix"], w["level"]) for w in warned] == [(agent, missing, fix, "warning")]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}) as c:
        agents = {entry["name"]: entry for entry in (await c.get("/api/agents")).json()}
    assert [problem["tool"] for problem in agents[agent]["unavailable_tools"]] == [missing]

    room_id = (await human.client.room_resolve_alias(f"#{room}:{e2e.homeserver.server_name}")).room_id
    await e2e.joined(human, room_id)
    e2e.model_server.script(
        ToolCall("think", {"title": "Plan", "thought": "No encyclopedia here."}), Text("Answered without it."),
        model="agent-model",
    )  # fmt: skip

    event_id = await human.send(room_id, "look it up")
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    reply = await human.wait_for(thread_replies(event_id, agent_id))

    assert reply["content"]["body"] == "Answered without it."
    first, second = agent_requests(e2e)
    assert tool_names(first) == ["think"]  # the agent has its other tools, and nothing of the missing one
    assert "Reasoning: No encyclopedia here." in last_tool_message(second)
    assert await daemon.terminate() == 0
