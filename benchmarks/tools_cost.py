"""What configured tools cost: CPU per message with ten unused tools, and an MCP call through the daemon's path.

1. One daemon (subprocess, real Synapse, scripted model with instant replies) with two agents in two rooms:
   `plain` has no tools, `tooled` has ten (five built-in groups and five agno toolkits) it never calls.
   Messages go to each in alternating blocks (plain, tooled, plain, tooled), and the daemon's CPU time per
   message is measured for each agent: a same-run pair.
2. `mcp-server-time` (PyPI) over stdio: N calls made directly with the MCP SDK's client (`mcp.Client` on
   `stdio_client`), then N through the daemon's tool path (`call_tool` on the pool's tool, in a bound turn
   context with the tool hooks' registry, sandboxed transport). This process's CPU time per call for each.

`BENCH_MESSAGES` (per block, default 30) and `BENCH_MCP_CALLS` (default 200) set the sizes.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.e2e_latency import (  # noqa: E402
    _drain,
    _latencies,
    _noop_plugin,
    _proc_cpu_s,
    _start_daemon,
    _wait_joined,
)
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.mcp_servers import time_server_command  # noqa: E402
from tests.integration.support import HumanClient  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "30"))
MCP_CALLS = int(os.environ.get("BENCH_MCP_CALLS", "200"))
TEN_TOOLS = [
    "calculator", "file", "shell", "matrix", "attachments",
    "reasoning", "sleep", "file_generation", "hackernews", "pubmed",
]  # fmt: skip


def _config(base_url: str, user: str, rooms: dict[str, str]) -> dict[str, Any]:
    model = {"provider": "openai", "id": "bench", "extra_kwargs": {"base_url": base_url, "max_retries": 0}}
    agents = {
        name: {"display_name": name.title(), "role": "Benchmarks.", "model": "default", "rooms": [room]}
        for name, room in rooms.items()
    }
    agents["tooled"]["tools"] = TEN_TOOLS
    return {
        "models": {"default": model},
        "agents": agents,
        "router": {"model": "default"},
        "authorization": {"global_users": [user], "room_permissions": {}, "default_room_access": False},
        "room_defaults": {"invite_users": [user]},
        "defaults": {"enable_streaming": False},
        "plugins": ["./plugins/noop"],
    }


async def unused_tools(
    hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path
) -> dict[str, float]:
    """CPU ms per message of the daemon for the agent without tools and the one with ten it does not call."""
    tag = secrets.token_hex(3)
    workdir = root / f"tools{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    rooms = {"plain": f"plain{tag}", "tooled": f"tooled{tag}"}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, rooms)))
    process, _ = _start_daemon(workdir, hs, f"t{tag}_")
    _drain(process)
    cpu = {"plain": 0.0, "tooled": 0.0}
    try:
        ids = {}
        for agent, key in rooms.items():
            resolved = await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")
            ids[agent] = resolved.room_id
            await _wait_joined(human, resolved.room_id)
            await _latencies(human, resolved.room_id, f"@t{tag}_{agent}:{hs.server_name}", 5)  # warm-up
        for agent in ("plain", "tooled", "plain", "tooled"):
            before = _proc_cpu_s(process.pid)
            await _latencies(human, ids[agent], f"@t{tag}_{agent}:{hs.server_name}", MESSAGES)
            cpu[agent] += _proc_cpu_s(process.pid) - before
    finally:
        process.terminate()
        process.wait(30)
    tools_sent = {len(r.get("tools") or []) for r in model.requests if r.get("tools")}
    return {agent: seconds / (2 * MESSAGES) * 1000 for agent, seconds in cpu.items()} | {
        "tools": max(tools_sent or {0})
    }


async def _direct_calls(count: int) -> float:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=time_server_command())) as client:
        await client.call_tool("get_current_time", {"timezone": "UTC"})  # warm-up
        started = time.process_time()
        for _ in range(count):
            await client.call_tool("get_current_time", {"timezone": "UTC"})
        return (time.process_time() - started) / count * 1000


async def _daemon_calls(count: int, root: Path) -> float:
    from mindroom.config.main import Config
    from mindroom.constants import RuntimePaths
    from mindroom.hooks.registry import HookRegistry
    from mindroom.tool_system.calls import call_tool
    from mindroom.tool_system.mcp.servers import MCPServerPool
    from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
    from mindroom.tool_system.spec import AgentToolEnvironment

    config = Config.model_validate(
        {
            "mcp_servers": {"clock": {"transport": "stdio", "command": time_server_command()}},
            "agents": {"a": {"display_name": "A", "tools": ["mcp_clock"]}},
        }
    )
    pool = MCPServerPool(RuntimePaths(root / "config.yaml", root / "data", {}))
    try:
        await pool.apply(config)
        while [s.state for s in pool.statuses()] != ["ready"]:
            await asyncio.sleep(0.05)
        spec = {s.name: s for s in pool.tool_specs(config, "clock", AgentToolEnvironment("a", root))}[
            "clock_get_current_time"
        ]
        context = ToolRuntimeContext(HookRegistry.empty(), agent_name="a", correlation_id="bench", config=config)
        with bind_runtime_context(context):
            await call_tool(spec, "a", {"timezone": "UTC"})  # warm-up
            started = time.process_time()
            for _ in range(count):
                await call_tool(spec, "a", {"timezone": "UTC"})
            return (time.process_time() - started) / count * 1000
    finally:
        await pool.close()


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        direct = await _direct_calls(MCP_CALLS)
        through = await _daemon_calls(MCP_CALLS, Path(tmp))
        print(f"MCP call (mcp-server-time, stdio), CPU of this process per call over {MCP_CALLS} calls:")
        print(f"  direct with the MCP client: {direct:.2f} ms; through the daemon's tool path: {through:.2f} ms")
        print(f"  difference: {through - direct:+.2f} ms (target <= 2)")
        with TestHomeserver() as hs, ScriptedModelServer() as model:
            model.set_default(Text("pong"))
            user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
            human = HumanClient(hs.url, user.user_id, user.password)
            await human.start()
            try:
                result = await unused_tools(hs, model, human, Path(tmp))
            finally:
                await human.close()
    print(f"daemon CPU per message over {2 * MESSAGES} messages each (same run, alternating blocks):")
    print(f"  agent without tools: {result['plain']:.2f} ms; agent with ten unused tools: {result['tooled']:.2f} ms")
    print(f"  difference: {result['tooled'] - result['plain']:+.2f} ms ({int(result['tools'])} tool schemas sent)")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
