"""Background observers: queued per plugin, never awaited by the emitter, overflow dropped and counted, drained."""

import asyncio

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_MODEL_BEFORE_CALL,
    EVENT_TOOL_AFTER_CALL,
    EVENT_TOOL_BEFORE_CALL,
    HookRegistry,
    ToolAfterCallContext,
    hook,
    hook_telemetry,
    hooks_report_text,
)
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin
from tests.integration.support import eventually


def after_ctx(n: int = 0) -> ToolAfterCallContext:
    return ToolAfterCallContext(tool_name="shell", arguments={"n": n}, agent_name="code", room_id="!r:localhost")


def registry(*callbacks, name="p") -> HookRegistry:
    return HookRegistry.from_plugins([stub_plugin(name, callbacks)])


@pytest.mark.asyncio
async def test_background_observer_is_not_awaited_by_the_emission_and_runs_after():
    release = asyncio.Event()
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL, background=True)
    async def slow(ctx):
        await release.wait()
        seen.append(ctx.arguments["n"])

    @hook(EVENT_TOOL_AFTER_CALL, priority=200)
    async def inline(ctx):
        seen.append("inline")

    reg = registry(slow, inline)
    await asyncio.wait_for(emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(1)), timeout=1)

    assert seen == ["inline"]
    release.set()
    await eventually(lambda: seen == ["inline", 1], "the background call finishing")
    assert hook_telemetry(reg)[0].calls == 1


@pytest.mark.asyncio
async def test_background_observer_overflow_is_dropped_and_counted_per_plugin():
    release = asyncio.Event()
    ran = []

    @hook(EVENT_TOOL_AFTER_CALL, background=True)
    async def blocked(ctx):
        await release.wait()
        ran.append(ctx.arguments["n"])

    reg = registry(blocked)
    reg.background.size = 3
    for n in range(6):  # nothing yields in between: the worker has taken none yet
        await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(n))

    row = hook_telemetry(reg)[0]
    assert (row.background, row.dropped) == (True, 3)
    report = hooks_report_text(reg)
    assert "mode=enforce background" in report and " dropped=3 " in report
    release.set()
    await eventually(lambda: ran == [0, 1, 2], "the queued calls running in order")


@pytest.mark.asyncio
async def test_background_observer_exception_is_counted_and_the_next_call_still_runs():
    ran = []

    @hook(EVENT_TOOL_AFTER_CALL, background=True)
    async def flaky(ctx):
        if ctx.arguments["n"] == 0:
            raise RuntimeError("boom")
        ran.append(ctx.arguments["n"])

    reg = registry(flaky)
    await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(0))
    await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(1))

    await eventually(lambda: ran == [1], "the call after the failing one")
    row = hook_telemetry(reg)[0]
    assert (row.calls, row.failures, row.last_error) == (2, 1, "RuntimeError: boom")


@pytest.mark.asyncio
async def test_background_observer_timeout_is_counted():
    @hook(EVENT_TOOL_AFTER_CALL, background=True, timeout_ms=20)
    async def slow(ctx):
        await asyncio.sleep(5)

    reg = registry(slow)
    await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx())

    await eventually(lambda: hook_telemetry(reg)[0].timeouts == 1, "the background call timing out")


@pytest.mark.asyncio
async def test_background_drain_lets_queued_calls_finish_within_the_grace():
    ran = []

    @hook(EVENT_TOOL_AFTER_CALL, background=True)
    async def record(ctx):
        await asyncio.sleep(0.01)
        ran.append(ctx.arguments["n"])

    reg = registry(record)
    for n in range(5):
        await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(n))

    assert await reg.background.drain(5.0) == 0
    assert ran == [0, 1, 2, 3, 4]
    await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(9))  # after the drain: dropped, counted
    assert hook_telemetry(reg)[0].dropped == 1


@pytest.mark.asyncio
async def test_background_drain_past_the_grace_stops_the_worker_and_counts_what_is_left():
    started = asyncio.Event()

    @hook(EVENT_TOOL_AFTER_CALL, background=True, timeout_ms=60_000)
    async def stuck(ctx):
        started.set()
        await asyncio.sleep(60)

    reg = registry(stuck)
    for n in range(3):
        await emit(reg, EVENT_TOOL_AFTER_CALL, after_ctx(n))
    await asyncio.wait_for(started.wait(), timeout=5)

    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await reg.background.drain(0.05) == 3  # the running call and the two queued
    assert loop.time() - began < 2
    assert hook_telemetry(reg)[0].dropped == 3


@pytest.mark.asyncio
async def test_background_queues_carry_over_a_reload():
    @hook(EVENT_TOOL_AFTER_CALL, background=True)
    async def watch(ctx): ...

    old = registry(watch)
    new = HookRegistry.from_plugins([stub_plugin("p", [watch])], previous=old)

    assert new.background is old.background
    assert new.without_plugin("p").background is old.background


@pytest.mark.parametrize("event", [EVENT_TOOL_BEFORE_CALL, EVENT_MODEL_BEFORE_CALL, EVENT_MESSAGE_ENRICH,
                                   EVENT_MESSAGE_BEFORE_RESPONSE])  # fmt: skip
def test_background_applies_to_observer_events_only(event):
    with pytest.raises(ValueError, match="observer events only"):
        hook(event, background=True)


def test_background_is_not_for_required_hooks():
    with pytest.raises(ValueError, match="observer events only"):
        hook("agent:started", background=True, required=True)


@pytest.mark.asyncio
async def test_background_message_received_hook_cannot_suppress():
    from mindroom.hooks import MessageReceivedContext

    done = asyncio.Event()

    @hook(EVENT_MESSAGE_RECEIVED, background=True)
    async def mute(ctx):
        ctx.suppress = True
        done.set()

    ctx = MessageReceivedContext()
    await emit(registry(mute), EVENT_MESSAGE_RECEIVED, ctx)
    await asyncio.wait_for(done.wait(), timeout=5)

    assert ctx.suppress is False
