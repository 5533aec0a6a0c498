"""MCP servers as tools: results as the model reads them, the URL policy, and the pool with real servers.

The servers are real ones from the package registries: `mcp-server-time` (PyPI) and, over stdio in the
sandbox, `@modelcontextprotocol/server-everything` (npm). `/bin/sleep` stands for a server that hangs: it
never answers, which is all such a server does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from mindroom.backoff import Backoff
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.mcp.connection import MCP_RETRY
from mindroom.tool_system.mcp.servers import MCPServerPool
from mindroom.tool_system.mcp.wire import check_remote_url, result_output
from mindroom.tool_system.sandbox.reaper import descendants
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolOutput
from tests.integration.mcp_servers import NPM_PREFIX, everything_script, time_server_command

FAST = Backoff(first_s=0.2, max_s=0.5)


def content(**fields):
    return SimpleNamespace(**fields)


def result(*items, is_error=False, structured=None):
    return SimpleNamespace(content=list(items), is_error=is_error, structured_content=structured)


@pytest.mark.asyncio
async def test_mcp_result_text_images_errors_and_structured_content():
    png = base64.b64encode(b"\x89PNG fake").decode()

    assert result_output(result(content(type="text", text="a"), content(type="text", text="b"))) == "a\nb"
    output = result_output(
        result(content(type="text", text="see"), content(type="image", data=png, mime_type="image/png"))
    )
    assert isinstance(output, ToolOutput) and output.text == "see"
    assert (output.files[0].name, output.files[0].data, output.files[0].is_image) == (
        "image-2.png",
        b"\x89PNG fake",
        True,
    )
    assert result_output(result(structured={"n": 1})) == json.dumps({"n": 1})
    with pytest.raises(ToolError, match="no such city"):
        result_output(result(content(type="text", text="no such city"), is_error=True))


@pytest.mark.asyncio
async def test_mcp_remote_urls_refuse_private_and_metadata_addresses():
    with pytest.raises(ToolError, match="allow_private_network is off"):
        await check_remote_url("http://127.0.0.1:9/mcp", False)
    await check_remote_url("http://127.0.0.1:9/mcp", True)
    with pytest.raises(ToolError, match="never reached"):
        await check_remote_url("http://169.254.169.254/latest", True)
    with pytest.raises(ToolError, match="not an http"):
        await check_remote_url("file:///etc/passwd", True)


def test_mcp_retry_doubles_from_five_to_sixty_seconds():
    assert [MCP_RETRY.delay(n) for n in range(1, 7)] == [5, 10, 20, 40, 60, 60]


def time_server(prefix: str, *args: str, **extra) -> dict:
    return {"transport": "stdio", "command": time_server_command(), "args": list(args), "tool_prefix": prefix, **extra}


def servers_config(servers: dict, **tools) -> Config:
    return Config.model_validate(
        {
            "mcp_servers": servers,
            "agents": {"a": {"display_name": "A", "tools": [f"mcp_{i}" for i in servers]}},
            **tools,
        }
    )


async def settled(pool: MCPServerPool, server_id: str, timeout: float = 30.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        status = {s.server_id: s for s in pool.statuses()}[server_id]
        if status.state == "ready" or status.restarts:
            return status
        await asyncio.sleep(0.05)
    raise TimeoutError(server_id)


@pytest_asyncio.fixture
async def pool(tmp_path: Path):
    made = MCPServerPool(RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {}), retry=FAST)
    yield made
    await made.close()


@pytest.mark.asyncio
async def test_mcp_pool_restarts_only_the_servers_whose_config_changed(pool: MCPServerPool, tmp_path: Path):
    config = servers_config({"one": time_server("one"), "two": time_server("two")})
    assert sorted(await pool.apply(config)) == ["one", "two"]
    await settled(pool, "one")
    await settled(pool, "two")
    one, two = pool.connection("one"), pool.connection("two")

    assert await pool.apply(config) == ()
    changed = servers_config({"one": time_server("one"), "two": time_server("two", "--local-timezone", "UTC")})
    assert await pool.apply(changed) == ("two",)
    assert pool.connection("one") is one and pool.connection("two") is not two
    assert (await pool.apply(servers_config({"two": changed.mcp_servers["two"]}))) == ()
    assert pool.connection("one") is None and one.status().state == "stopped"


@pytest.mark.asyncio
async def test_mcp_pool_gives_agents_prefixed_filtered_tools_that_call_the_server(pool: MCPServerPool, tmp_path: Path):
    config = Config.model_validate(
        {
            "mcp_servers": {"clock": time_server("tz", "--local-timezone", "UTC", exclude_tools=["convert_time"])},
            "agents": {"a": {"display_name": "A", "tools": [{"mcp_clock": {"call_timeout_seconds": 7}}]}},
        }
    )
    await pool.apply(config)
    await settled(pool, "clock")

    (spec,) = pool.tool_specs(config, "clock", AgentToolEnvironment("a", tmp_path))

    assert (spec.name, spec.toolkit, spec.timeout_s) == ("tz_get_current_time", "mcp_clock", 12.0)
    assert spec.parameters["required"] == ["timezone"]
    assert '"timezone": "Asia/Tokyo"' in await call_tool(spec, "a", {"timezone": "Asia/Tokyo"})
    assert "Invalid timezone" in await call_tool(spec, "a", {"timezone": "Mars/Olympus"})


@pytest.mark.asyncio
async def test_mcp_pool_reports_a_server_that_cannot_start_and_retries_it(pool: MCPServerPool, tmp_path: Path):
    await pool.apply(servers_config({"gone": {"transport": "stdio", "command": str(tmp_path / "no-such-server")}}))

    status = await settled(pool, "gone")

    assert status.state == "failed" and "does not exist" in status.reason and status.restarts >= 1
    assert await within(10, lambda: pool.statuses()[0].restarts >= 2), "the pool did not retry the server"


@pytest.mark.asyncio
async def test_mcp_pool_gives_up_on_a_server_that_hangs_and_kills_it(pool: MCPServerPool):
    sleep = shutil.which("sleep")
    hung = {"transport": "stdio", "command": sleep, "args": ["600"], "startup_timeout_seconds": 1}
    config = servers_config({"hung": hung}, tools={"mcp": {"sandbox": "none"}})
    await pool.apply(config)

    status = await settled(pool, "hung", timeout=10)

    assert "did not start and list its tools within 1 s" in status.reason
    await pool.close()
    assert await within(10, lambda: not hung_sleeps()), f"the hung server survived: {hung_sleeps()}"


async def within(seconds: float, condition) -> bool:
    """Whether `condition()` holds before `seconds` pass (checked every 20 ms)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def hung_sleeps() -> list[int]:
    """This process's descendants running the hung server's `sleep 600`."""
    return [pid for pid in descendants(os.getpid()) if command_line(pid).endswith(b"\x00600\x00")]


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.asyncio
@pytest.mark.parametrize("sandbox", ["auto", "none"])
async def test_mcp_stdio_server_gets_only_its_own_variables_and_a_private_home(
    pool: MCPServerPool, tmp_path: Path, sandbox
):
    node = shutil.which("node")
    server = {
        "transport": "stdio",
        "command": node,
        "args": [str(everything_script()), "stdio"],
        "env": {"GREETING": "hi"},
    }
    config = servers_config({"ev": server}, tools={"mcp": {"sandbox": sandbox, "readonly_paths": [str(NPM_PREFIX)]}})
    await pool.apply(config)
    assert (await settled(pool, "ev")).state == "ready"
    specs = {s.name: s for s in pool.tool_specs(config, "ev", AgentToolEnvironment("a", tmp_path))}

    seen = json.loads(await call_tool(specs["ev_get-env"], "a", {}))

    assert set(seen) <= {"PATH", "LANG", "HOME", "PWD", "GREETING"} and seen["GREETING"] == "hi"
    assert seen["HOME"] != os.environ.get("HOME")
    if sandbox == "auto" and shutil.which("bwrap"):
        assert seen["HOME"] == "/home/agent"
