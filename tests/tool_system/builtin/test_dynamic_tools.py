"""Deferred tools: kept out of what the model is sent, found with `tool_search`, and run with `call_tool` as their
own calls, so the gates and approval rules of a deferred tool hold exactly as for a direct call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.daemon.tool_parts import LiveTools
from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, HookRegistry, hook
from mindroom.tool_system.builtin.deferral import deferred_names, visible_tool_names
from mindroom.tool_system.builtin.dynamic_tools import dynamic_tools
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment
from tests.hooks.support import stub_plugin

CONFIG = Config.model_validate(
    {
        "agents": {
            "helper": {"display_name": "Helper", "tools": [{"calculator": {"defer": True}}, "file"]},
            "eager": {"display_name": "Eager", "tools": [{"calculator": {"defer": True, "initial": True}}]},
        }
    }
)


@hook(EVENT_TOOL_BEFORE_CALL)
async def no_forbidden_sums(ctx):
    if "666" in str(ctx.arguments.get("expression", "")):
        ctx.decline("That number is not computed here.")


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[Path]:
    cell = LiveCell(LiveState(config=CONFIG, registry=HookRegistry.empty()))
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(tools=LiveTools(cell)))
    yield tmp_path
    withdraw()


def turn(storage: Path) -> ToolRuntimeContext:
    registry = HookRegistry.from_plugins([stub_plugin("guard", [no_forbidden_sums])])
    paths = RuntimePaths(storage / "config.yaml", storage, {})
    return ToolRuntimeContext(registry, "helper", "!r:hs", "$t", "@alice:hs", config=CONFIG, runtime_paths=paths)


def test_deferred_tools_are_not_sent_and_bring_the_search_tools():
    assert deferred_names(CONFIG.agents["helper"]) == ("calculator",)
    assert visible_tool_names(CONFIG.agents["helper"]) == ("file", "dynamic_tools")
    assert visible_tool_names(CONFIG.agents["eager"]) == ("calculator",)  # initial: sent anyway


@pytest.mark.asyncio
async def test_dynamic_tools_find_and_run_a_deferred_tool_through_its_own_gates(storage: Path):
    search, run = dynamic_tools(AgentToolEnvironment("helper", storage / "workspace"))
    context = turn(storage)
    with bind_runtime_context(context):
        found = json.loads(search.function("add numbers calculate"))
        listed = json.loads(search.function(""))
        answer = await call_tool(run, "helper", {"name": "calculate", "arguments": {"expression": "6 * 7"}})
        declined = await call_tool(run, "helper", {"name": "calculate", "arguments": {"expression": "666 + 1"}})
        not_deferred = json.loads(await run.function(name="read_file", arguments={"path": "x"}))

    (match,) = found["matches"]
    assert match["name"] == "calculate" and "expression" in match["parameters"]["properties"]
    assert [item["name"] for item in listed["functions"]] == ["calculate"]
    assert answer == "42"
    assert "[TOOL CALL DECLINED]" in declined and "Tool: calculate" in declined
    assert not_deferred["status"] == "error" and "'read_file' was not called" in not_deferred["message"]
    # Each deferred run is recorded as its own call, under its own name, inside the call_tool call.
    assert [record.tool_name for record in context.calls] == ["calculate", "call_tool", "calculate", "call_tool"]
    assert [record.blocked for record in context.calls] == [False, False, True, False]
