"""`emit_gate` (gate mode): first decline stops the chain; broken gates fail open unless fail-closed."""

import asyncio

import pytest

from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, HookRegistry, ToolBeforeCallContext, hook
from mindroom.hooks.execution import emit_gate
from tests.hooks.support import stub_plugin


def tool_ctx(tool_name="read_file", **arguments):
    return ToolBeforeCallContext(
        tool_name=tool_name,
        arguments=arguments,
        agent_name="code",
        room_id="!room:localhost",
        thread_id=None,
        requester_id="@user:localhost",
        session_id="s1",
    )


@hook(EVENT_TOOL_BEFORE_CALL, priority=10)
async def block_secret_reads(ctx):
    if ctx.tool_name == "read_file" and "secret" in str(ctx.arguments.get("path", "")):
        ctx.decline("Sensitive files must stay unread.")


@pytest.mark.asyncio
async def test_emit_gate_spec_example_declines_secret_reads():
    registry = HookRegistry.from_plugins([stub_plugin("p", [block_secret_reads])])

    declined = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx(path="/etc/secret.txt"))
    allowed = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx(path="/etc/hosts"))

    assert declined.declined is True
    assert declined.decline_reason == "Sensitive files must stay unread."
    assert allowed.declined is False
    assert allowed.decline_reason == ""
    assert registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats.declines == 1


@pytest.mark.asyncio
async def test_emit_gate_returns_the_same_context():
    registry = HookRegistry.from_plugins([stub_plugin("p", [block_secret_reads])])
    ctx = tool_ctx(path="secret")

    assert await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ctx) is ctx


@pytest.mark.asyncio
async def test_emit_gate_first_decline_stops_the_chain():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL, priority=1)
    async def first(ctx):
        calls.append("first")
        ctx.decline("first says no")

    @hook(EVENT_TOOL_BEFORE_CALL, priority=2)
    async def second(ctx):
        calls.append("second")
        ctx.decline("second says no")

    registry = HookRegistry.from_plugins([stub_plugin("p", [second, first])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert calls == ["first"]
    assert ctx.decline_reason == "first says no"


@pytest.mark.asyncio
async def test_emit_gate_all_allow_runs_every_gate():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL, priority=1)
    async def first(ctx):
        calls.append("first")

    @hook(EVENT_TOOL_BEFORE_CALL, priority=2)
    async def second(ctx):
        calls.append("second")

    registry = HookRegistry.from_plugins([stub_plugin("p", [first, second])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert calls == ["first", "second"]
    assert ctx.declined is False


@pytest.mark.asyncio
async def test_emit_gate_raising_gate_fails_open_and_chain_continues():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL, priority=1)
    async def broken(ctx):
        ctx.decline("half-made decision")
        raise RuntimeError("boom")

    @hook(EVENT_TOOL_BEFORE_CALL, priority=2)
    async def next_gate(ctx):
        calls.append(ctx.declined)

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken, next_gate])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is False
    assert ctx.decline_reason == ""
    assert calls == [False]


@pytest.mark.asyncio
async def test_emit_gate_timed_out_gate_fails_open():
    @hook(EVENT_TOOL_BEFORE_CALL, timeout_ms=30)
    async def slow(ctx):
        await asyncio.sleep(5)
        ctx.decline("too late")

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])
    loop = asyncio.get_running_loop()
    start = loop.time()
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert loop.time() - start < 1
    assert ctx.declined is False
    assert registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats.timeouts == 1


@pytest.mark.asyncio
async def test_emit_gate_fail_closed_declines_naming_the_hook():
    @hook(EVENT_TOOL_BEFORE_CALL, name="shell-guard", fail_closed=True)
    async def guard(ctx):
        raise RuntimeError("policy server down")

    registry = HookRegistry.from_plugins([stub_plugin("safety", [guard])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is True
    assert "safety:shell-guard" in ctx.decline_reason


@pytest.mark.asyncio
async def test_emit_gate_hook_can_be_called_directly_with_plain_context():
    @hook(event="tool:before_call", name="shell-guard", timeout_ms=1000)
    async def shell_guard(ctx):
        if ctx.tool_name == "shell" and "rm -rf" in ctx.arguments.get("command", ""):
            ctx.decline("Destructive command refused.")

    ctx = ToolBeforeCallContext(
        tool_name="shell",
        arguments={"command": "rm -rf /"},
        agent_name="code",
        room_id="!room:localhost",
        thread_id=None,
        requester_id="@user:localhost",
        session_id=None,
    )
    await shell_guard(ctx)

    assert ctx.declined is True
    assert ctx.decline_reason == "Destructive command refused."
    assert ctx.event_name == EVENT_TOOL_BEFORE_CALL


@pytest.mark.asyncio
async def test_emit_gate_filters_by_agent():
    @hook(EVENT_TOOL_BEFORE_CALL, agents=["other"])
    async def deny_all(ctx):
        ctx.decline("no")

    registry = HookRegistry.from_plugins([stub_plugin("p", [deny_all])])

    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is False


@pytest.mark.asyncio
async def test_emit_gate_decline_reason_is_stringified():
    @hook(EVENT_TOOL_BEFORE_CALL)
    async def deny(ctx):
        ctx.decline(ValueError("not allowed"))

    registry = HookRegistry.from_plugins([stub_plugin("p", [deny])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.decline_reason == "not allowed"


@pytest.mark.asyncio
async def test_emit_gate_failing_gate_called_exactly_once():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def broken(ctx):
        calls.append(1)
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken])])
    await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert calls == [1]
