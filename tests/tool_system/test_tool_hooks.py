"""`mindroom.tool_system.tool_hooks._call_tool`: the one function every tool body runs through, which a plugin
may replace at import (as MindRoom 2026.10's agent-vault-bridge does) to wrap each call."""

import contextvars
import inspect

import pytest

from mindroom.ai import GenerationRequest, close_caches, generate
from mindroom.ai.tools import agno_tools
from mindroom.config.main import ModelConfig
from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, HookRegistry, hook
from mindroom.testing.model_server import ScriptedModelServer, Text, ToolCall, model_server
from mindroom.tool_system import tool_hooks
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import IsolationLimits, ToolSpec
from tests.hooks.support import stub_plugin
from tests.tool_system import isolated_tools

__all__ = ["model_server"]

pytestmark = pytest.mark.asyncio

BROKER: contextvars.ContextVar[str | None] = contextvars.ContextVar("broker", default=None)


@pytest.fixture
def wrapped(monkeypatch):
    """Every call the replaced `_call_tool` saw; it scopes a value the tool can read, as a broker would."""
    seen = []
    original = tool_hooks._call_tool

    async def through_the_broker(func, args, *, tool_name, agent_name):
        seen.append((tool_name, agent_name, dict(args)))
        token = BROKER.set(f"via-broker:{tool_name}")
        try:
            return await original(func, args, tool_name=tool_name, agent_name=agent_name)
        except Exception as exc:
            seen.append((tool_name, "raised", type(exc).__name__))
            raise
        finally:
            BROKER.reset(token)

    monkeypatch.setattr(tool_hooks, "_call_tool", through_the_broker)
    return seen


def broker_value() -> str | None:
    """What the wrapper scoped around this call."""
    return BROKER.get()


async def async_broker_value() -> str | None:
    """The same, from a coroutine function."""
    return BROKER.get()


def failing() -> None:
    """Always fails."""
    raise RuntimeError("tool broke")


async def test_call_tool_seam_has_mindrooms_signature():
    parameters = inspect.signature(tool_hooks._call_tool).parameters

    assert list(parameters) == ["func", "args", "tool_name", "agent_name"]
    assert parameters["tool_name"].kind is parameters["agent_name"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.iscoroutinefunction(tool_hooks._call_tool)


async def test_call_tool_seam_is_a_plain_module_attribute_to_read_replace_and_restore():
    from mindroom.tool_system.tool_hooks import _call_tool as imported

    original = tool_hooks._call_tool
    calls = []

    async def wrapper(func, args, *, tool_name, agent_name):
        calls.append(tool_name)
        return await original(func, args, tool_name=tool_name, agent_name=agent_name)

    tool_hooks._call_tool = wrapper
    try:
        assert tool_hooks._call_tool is wrapper
        assert await call_tool(ToolSpec("sync_tool", broker_value), "helper", {}) == "(no output)"
    finally:
        tool_hooks._call_tool = original

    assert imported is original
    assert await call_tool(ToolSpec("sync_tool", broker_value), "helper", {}) == "(no output)"
    assert calls == ["sync_tool"]


async def test_replacing_call_tool_wraps_every_kind_of_tool_call(wrapped):
    specs = [
        ToolSpec("sync_tool", broker_value),
        ToolSpec("async_tool", async_broker_value),
        ToolSpec("thread_tool", broker_value, in_thread=True),
        ToolSpec("echo", isolated_tools.echo, isolated=True, limits=IsolationLimits(timeout_s=10)),
    ]

    results = [await call_tool(spec, "helper", {"text": "x"} if spec.isolated else {}) for spec in specs]

    assert results[:3] == ["via-broker:sync_tool", "via-broker:async_tool", "via-broker:thread_tool"]
    assert results[3] == "x"
    assert wrapped == [
        ("sync_tool", "helper", {}),
        ("async_tool", "helper", {}),
        ("thread_tool", "helper", {}),
        ("echo", "helper", {"text": "x"}),
    ]


async def test_replaced_call_tool_sees_failures_and_never_a_declined_call(wrapped):
    @hook(EVENT_TOOL_BEFORE_CALL)
    async def gate(ctx):
        if ctx.tool_name == "forbidden":
            ctx.decline("not here")

    context = ToolRuntimeContext(HookRegistry.from_plugins([stub_plugin("guard", [gate])]), "helper")
    with bind_runtime_context(context):
        declined = await call_tool(ToolSpec("forbidden", broker_value), "helper", {})
        failed = await call_tool(ToolSpec("failing", failing), "helper", {})

    assert declined.startswith("[TOOL CALL DECLINED]")
    assert failed == "[TOOL CALL FAILED]\nTool: failing\nError: RuntimeError: tool broke"
    assert wrapped == [("failing", "helper", {}), ("failing", "raised", "RuntimeError")]


async def test_replaced_call_tool_wraps_the_calls_of_agnos_agent_loop(
    wrapped, model_server: ScriptedModelServer, tmp_path
):
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return f"{a + b} {broker_value()}"

    model = ModelConfig(
        provider="openai", id="scripted-model", extra_kwargs={"base_url": model_server.base_url, "max_retries": 0}
    )
    model_server.script(ToolCall("add", {"a": 2, "b": 40}), Text("42"))
    request = GenerationRequest(
        agent_name="helper",
        display_name="Helper",
        role="",
        instructions=(),
        model=model,
        user_message="2 + 40",
        session_id="s1",
        num_history_runs=0,
        markdown=False,
        tools=agno_tools((ToolSpec("add", add),), "helper"),
    )
    try:
        await generate(request, storage_root=tmp_path, env={})
    finally:
        await close_caches()

    assert wrapped == [("add", "helper", {"a": 2, "b": 40})]
    assert model_server.requests[1]["messages"][-1]["content"] == "42 via-broker:add"
