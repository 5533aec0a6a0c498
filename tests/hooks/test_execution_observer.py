"""`emit` (observer mode): serial hooks, base fields bound per hook, failures lose only their own effects."""

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import (
    EVENT_AGENT_STARTED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_RECEIVED,
    EVENT_SCHEDULE_FIRED,
    AfterResponseContext,
    AgentLifecycleContext,
    HookRegistry,
    MessageReceivedContext,
    ScheduleFiredContext,
    hook,
)
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin


@pytest.mark.asyncio
async def test_emit_runs_hooks_serially_in_order():
    events = []

    @hook(EVENT_MESSAGE_RECEIVED, priority=1)
    async def slow_first(ctx):
        events.append("first:start")
        await asyncio.sleep(0.02)
        events.append("first:end")

    @hook(EVENT_MESSAGE_RECEIVED, priority=2)
    async def second(ctx):
        events.append("second:start")

    registry = HookRegistry.from_plugins([stub_plugin("p", [second, slow_first])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert events == ["first:start", "first:end", "second:start"]


@pytest.mark.asyncio
async def test_emit_failure_keeps_next_hook_running():
    calls = []

    @hook(EVENT_MESSAGE_RECEIVED, priority=1)
    async def broken(ctx):
        raise RuntimeError("boom")

    @hook(EVENT_MESSAGE_RECEIVED, priority=2)
    async def healthy(ctx):
        calls.append("healthy")

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken, healthy])])
    with capture_logs() as logs:
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert calls == ["healthy"]
    failure = next(entry for entry in logs if entry["event"] == "hook failed")
    assert failure["log_level"] == "warning"
    assert (failure["plugin"], failure["hook"]) == ("p", "broken")
    assert "RuntimeError: boom" in failure["error"]


@pytest.mark.asyncio
async def test_emit_failure_after_setting_suppress_loses_the_suppress():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def suppress_then_fail(ctx):
        ctx.suppress = True
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [suppress_then_fail])])
    ctx = MessageReceivedContext()
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is False


@pytest.mark.asyncio
async def test_emit_failure_keeps_earlier_hooks_effects():
    @hook(EVENT_MESSAGE_RECEIVED, priority=1)
    async def suppressor(ctx):
        ctx.suppress = True

    @hook(EVENT_MESSAGE_RECEIVED, priority=2)
    async def unsuppress_then_fail(ctx):
        ctx.suppress = False
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [suppressor, unsuppress_then_fail])])
    ctx = MessageReceivedContext()
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is True


@pytest.mark.asyncio
async def test_emit_suppress_from_successful_hook_sticks_and_later_hooks_still_run():
    seen = []

    @hook(EVENT_MESSAGE_RECEIVED, priority=1)
    async def suppressor(ctx):
        ctx.suppress = True

    @hook(EVENT_MESSAGE_RECEIVED, priority=2)
    async def observer(ctx):
        seen.append(ctx.suppress)

    registry = HookRegistry.from_plugins([stub_plugin("p", [suppressor, observer])])
    ctx = MessageReceivedContext()
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is True
    assert seen == [True]


@pytest.mark.asyncio
async def test_emit_schedule_fired_message_text_rolled_back_on_failure():
    @hook(EVENT_SCHEDULE_FIRED, priority=1)
    async def rewrite(ctx):
        ctx.message_text = "rewritten"

    @hook(EVENT_SCHEDULE_FIRED, priority=2)
    async def rewrite_then_fail(ctx):
        ctx.message_text = "broken"
        ctx.suppress = True
        raise ValueError("nope")

    registry = HookRegistry.from_plugins([stub_plugin("p", [rewrite, rewrite_then_fail])])
    ctx = ScheduleFiredContext(message_text="original", room_id="!r:l")
    await emit(registry, EVENT_SCHEDULE_FIRED, ctx)

    assert ctx.message_text == "rewritten"
    assert ctx.suppress is False


@pytest.mark.asyncio
async def test_emit_binds_plugin_name_settings_and_logger_per_hook():
    seen = []

    @hook(EVENT_AGENT_STARTED, priority=1)
    async def first(ctx):
        seen.append((ctx.plugin_name, dict(ctx.settings), ctx.logger._context.get("hook")))

    @hook(EVENT_AGENT_STARTED, priority=2)
    async def second(ctx):
        seen.append((ctx.plugin_name, dict(ctx.settings), ctx.logger._context.get("hook")))

    registry = HookRegistry.from_plugins(
        [stub_plugin("alpha", [first], settings={"k": 1}), stub_plugin("beta", [second], settings={"k": 2})]
    )
    await emit(registry, EVENT_AGENT_STARTED, AgentLifecycleContext(entity_name="code"))

    assert seen == [("alpha", {"k": 1}, "first"), ("beta", {"k": 2}, "second")]


@pytest.mark.asyncio
async def test_emit_frozen_result_cannot_be_modified():
    errors = []

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def tamper(ctx):
        try:
            ctx.result.response_text = "changed"
        except AttributeError as exc:
            errors.append(type(exc).__name__)
            raise

    registry = HookRegistry.from_plugins([stub_plugin("p", [tamper])])
    ctx = AfterResponseContext()
    await emit(registry, EVENT_MESSAGE_AFTER_RESPONSE, ctx)

    assert errors == ["FrozenInstanceError"]
    assert ctx.result.response_text == ""


@pytest.mark.asyncio
async def test_emit_without_hooks_returns_none_quickly():
    registry = HookRegistry.empty()
    ctx = MessageReceivedContext()

    assert await emit(registry, EVENT_MESSAGE_RECEIVED, ctx) is None
    assert ctx.suppress is False


@pytest.mark.asyncio
async def test_emit_only_runs_hooks_of_the_emitted_event():
    calls = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def received(ctx):
        calls.append("received")

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def after(ctx):
        calls.append("after")

    registry = HookRegistry.from_plugins([stub_plugin("p", [received, after])])
    await emit(registry, EVENT_MESSAGE_AFTER_RESPONSE, AfterResponseContext())

    assert calls == ["after"]


@pytest.mark.asyncio
async def test_emit_return_value_of_observer_is_ignored():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def returns_garbage(ctx):
        return object()

    registry = HookRegistry.from_plugins([stub_plugin("p", [returns_garbage])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    (compiled,) = registry.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert compiled.stats.failures == 0
    assert compiled.stats.calls == 1


@pytest.mark.asyncio
async def test_emit_failing_hook_is_called_exactly_once():
    calls = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def broken(ctx):
        calls.append(1)
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert calls == [1]
