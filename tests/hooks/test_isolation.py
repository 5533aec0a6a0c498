"""Fault isolation at the plugin boundary: timeouts, hangs, BaseExceptions, loop blocking, cancellation."""

import asyncio
import time

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    BeforeResponseContext,
    HookRegistry,
    MessageEnrichContext,
    MessageReceivedContext,
    ToolBeforeCallContext,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from tests.hooks.support import stub_plugin

HANG_S = 60.0
"""Guards a call that would hang if a cut-off failed; far past every timeout here (not a speed check)."""


async def run_mode(event, registry):
    """Emit `event` through its mode's function; returns True when the 'effect' of the hooks survived."""
    if event == EVENT_MESSAGE_RECEIVED:
        ctx = MessageReceivedContext()
        await emit(registry, event, ctx)
        return ctx.suppress
    if event == EVENT_MESSAGE_ENRICH:
        items = await emit_collect(registry, event, MessageEnrichContext())
        return bool(items)
    if event == EVENT_MESSAGE_BEFORE_RESPONSE:
        draft = await emit_transform(registry, event, BeforeResponseContext())
        return draft.suppress
    ctx = await emit_gate(registry, event, ToolBeforeCallContext(tool_name="t"))
    return ctx.declined


def apply_effect(ctx):
    """The mode's visible effect: suppress, an item, a suppressed draft, or a decline."""
    if isinstance(ctx, MessageReceivedContext):
        ctx.suppress = True
    elif isinstance(ctx, MessageEnrichContext):
        ctx.add_metadata("k", "v")
    elif isinstance(ctx, BeforeResponseContext):
        ctx.draft.suppress = True
    else:
        ctx.decline("no")


MODES = [EVENT_MESSAGE_RECEIVED, EVENT_MESSAGE_ENRICH, EVENT_MESSAGE_BEFORE_RESPONSE, EVENT_TOOL_BEFORE_CALL]


def probe_hook(event, calls):
    """A healthy hook that runs after the faulty one and records that it ran."""

    @hook(event, name="probe", priority=1000)
    async def probe(ctx):
        calls.append("probe")

    return probe


def stats_of(registry, event, name):
    return next(h for h in registry.hooks_for(event) if h.hook_name == name).stats


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt, RuntimeError, GeneratorExit])
@pytest.mark.parametrize("suspend_first", [False, True])
@pytest.mark.asyncio
async def test_isolation_base_exceptions_are_contained(event, exc_type, suspend_first):
    calls = []

    @hook(event, name="bad", priority=1)
    async def bad(ctx):
        apply_effect(ctx)
        if suspend_first:
            await asyncio.sleep(0)
        raise exc_type("bye")

    registry = HookRegistry.from_plugins([stub_plugin("p", [bad, probe_hook(event, calls)])])
    effect = await run_mode(event, registry)

    assert effect is False
    assert calls == ["probe"]
    stats = stats_of(registry, event, "bad")
    assert stats.failures == 1
    assert exc_type.__name__ in stats.last_error


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_isolation_hang_is_cut_off_at_timeout(event):
    calls = []

    @hook(event, name="hang", priority=1, timeout_ms=40)
    async def hang(ctx):
        apply_effect(ctx)
        await asyncio.Event().wait()

    registry = HookRegistry.from_plugins([stub_plugin("p", [hang, probe_hook(event, calls)])])
    loop = asyncio.get_running_loop()
    start = loop.time()
    with capture_logs() as logs:
        effect = await asyncio.wait_for(run_mode(event, registry), HANG_S)  # `hang` never ends: returning is the cut
    elapsed = loop.time() - start

    assert elapsed > 0.03  # not before its timeout
    assert effect is False
    assert calls == ["probe"]
    stats = stats_of(registry, event, "hang")
    assert (stats.failures, stats.timeouts) == (1, 1)
    timeout_log = next(entry for entry in logs if entry["event"] == "hook timed out")
    assert (timeout_log["plugin"], timeout_log["hook"], timeout_log["timeout_ms"]) == ("p", "hang", 40)


@pytest.mark.asyncio
async def test_isolation_timeout_uses_event_default():
    @hook(EVENT_TOOL_BEFORE_CALL)
    async def slow(ctx):
        await asyncio.sleep(HANG_S * 2)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])
    loop = asyncio.get_running_loop()
    start = loop.time()
    with capture_logs() as logs:
        await asyncio.wait_for(emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext()), HANG_S)

    assert loop.time() - start > 0.15  # not before its timeout
    assert [entry["timeout_ms"] for entry in logs if entry["event"] == "hook timed out"] == [200]  # the default
    assert registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats.timeouts == 1


@pytest.mark.asyncio
async def test_isolation_timeout_override_from_config_applies():
    @hook(EVENT_MESSAGE_RECEIVED, name="slow", timeout_ms=50_000)
    async def slow(ctx):
        await asyncio.sleep(HANG_S * 2)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow], hooks={"slow": {"timeout_ms": 30}})])
    with capture_logs() as logs:
        await asyncio.wait_for(emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext()), HANG_S)

    assert [entry["timeout_ms"] for entry in logs if entry["event"] == "hook timed out"] == [30]  # the config's
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.timeouts == 1


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_isolation_hook_finishing_within_timeout_is_never_cut_off(event):
    @hook(event, name="steady", timeout_ms=150)
    async def steady(ctx):
        for _ in range(5):
            await asyncio.sleep(0.01)
        apply_effect(ctx)

    registry = HookRegistry.from_plugins([stub_plugin("p", [steady])])
    for _ in range(3):
        assert await run_mode(event, registry) is True

    stats = stats_of(registry, event, "steady")
    assert (stats.calls, stats.failures, stats.timeouts) == (3, 0, 0)


@pytest.mark.asyncio
async def test_isolation_many_hooks_close_to_their_timeout_all_complete():
    hooks = []
    for index in range(10):

        @hook(EVENT_MESSAGE_ENRICH, name=f"h{index}", timeout_ms=200)
        async def callback(ctx, index=index):
            await asyncio.sleep(0.1)
            ctx.add_metadata(f"k{index}", "ok")

        hooks.append(callback)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert len(items) == 10


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("suspend_first", [False, True])
@pytest.mark.asyncio
async def test_isolation_hook_raising_cancelled_error_on_its_own_is_contained(event, suspend_first):
    calls = []

    @hook(event, name="cancels", priority=1)
    async def cancels(ctx):
        apply_effect(ctx)
        if suspend_first:
            await asyncio.sleep(0)
        raise asyncio.CancelledError

    registry = HookRegistry.from_plugins([stub_plugin("p", [cancels, probe_hook(event, calls)])])
    effect = await run_mode(event, registry)

    assert effect is False
    assert calls == ["probe"]
    assert stats_of(registry, event, "cancels").failures == 1
    assert asyncio.current_task().cancelling() == 0


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_isolation_caller_cancellation_propagates(event):
    started = asyncio.Event()
    finished = []
    calls = []

    @hook(event, name="slow", priority=1, timeout_ms=5000)
    async def slow(ctx):
        started.set()
        await asyncio.sleep(2)
        finished.append(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow, probe_hook(event, calls)])])
    task = asyncio.ensure_future(run_mode(event, registry))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == []
    # Collector hooks start together, so only there did the later hook already run.
    assert calls == (["probe"] if event == EVENT_MESSAGE_ENRICH else [])
    stats = stats_of(registry, event, "slow")
    assert stats.failures == 0
    assert stats.consecutive_failures == 0


@pytest.mark.asyncio
async def test_isolation_caller_timeout_propagates_through_emit():
    @hook(EVENT_MESSAGE_RECEIVED, timeout_ms=5000)
    async def slow(ctx):
        await asyncio.sleep(2)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.03):
            await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.timeouts == 0


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_isolation_hook_swallowing_its_timeout_is_still_cut_off(event):
    calls = []

    @hook(event, name="stubborn", priority=1, timeout_ms=30)
    async def stubborn(ctx):
        apply_effect(ctx)
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                pass
        finished.set()

    released, finished = asyncio.Event(), asyncio.Event()
    registry = HookRegistry.from_plugins([stub_plugin("p", [stubborn, probe_hook(event, calls)])])
    try:
        effect = await asyncio.wait_for(run_mode(event, registry), HANG_S)
        assert not finished.is_set()  # the emit went on while the hook still ignored its cancellation
    finally:
        released.set()

    assert effect is False
    assert calls == ["probe"]
    assert stats_of(registry, event, "stubborn").timeouts == 1


@pytest.mark.asyncio
async def test_isolation_hook_returning_after_catching_its_timeout_counts_as_timeout():
    @hook(EVENT_MESSAGE_RECEIVED, name="sneaky", timeout_ms=30)
    async def sneaky(ctx):
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            ctx.suppress = True

    registry = HookRegistry.from_plugins([stub_plugin("p", [sneaky])])
    ctx = MessageReceivedContext()
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is False
    assert stats_of(registry, EVENT_MESSAGE_RECEIVED, "sneaky").timeouts == 1


@pytest.mark.asyncio
async def test_isolation_caller_cancellation_propagates_even_if_hook_swallows_it():
    started = asyncio.Event()

    released = asyncio.Event()

    @hook(EVENT_MESSAGE_RECEIVED, timeout_ms=3_600_000)
    async def stubborn(ctx):
        started.set()
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                pass

    registry = HookRegistry.from_plugins([stub_plugin("p", [stubborn])])
    task = asyncio.ensure_future(emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext()))
    await started.wait()
    task.cancel()

    try:  # the hook never ends by itself: the caller's cancellation had to go past it
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, HANG_S)
    finally:
        released.set()


def cpu_spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


BLOCKERS = {"sleep": time.sleep, "cpu": cpu_spin}


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("blocker", sorted(BLOCKERS))
@pytest.mark.parametrize("suspend_first", [False, True])
@pytest.mark.asyncio
async def test_isolation_loop_blocking_hook_is_reported_and_keeps_its_effect(event, blocker, suspend_first):
    calls = []

    @hook(event, name="blocker", priority=1, timeout_ms=2000)
    async def blocking(ctx):
        if suspend_first:
            await asyncio.sleep(0)
        BLOCKERS[blocker](0.05)
        apply_effect(ctx)

    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [blocking, probe_hook(event, calls)])], blocking_threshold_ms=20
    )
    with capture_logs() as logs:
        effect = await run_mode(event, registry)

    assert effect is True
    # A gate stops at the first decline; elsewhere the next hook runs.
    assert calls == ([] if event == EVENT_TOOL_BEFORE_CALL else ["probe"])
    stats = stats_of(registry, event, "blocker")
    assert (stats.failures, stats.blocked_loop) == (0, 1)
    blocked = next(entry for entry in logs if entry["event"] == "hook blocked the event loop")
    assert blocked["log_level"] == "error"
    assert (blocked["plugin"], blocked["hook"]) == ("p", "blocker")
    assert blocked["blocked_ms"] >= 45


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("blocker", sorted(BLOCKERS))
@pytest.mark.parametrize("suspend_first", [False, True])
@pytest.mark.asyncio
async def test_isolation_loop_blocking_hook_past_its_timeout_is_a_failure(event, blocker, suspend_first):
    calls = []

    @hook(event, name="blocker", priority=1, timeout_ms=30)
    async def blocking(ctx):
        if suspend_first:
            await asyncio.sleep(0)
        BLOCKERS[blocker](0.05)
        apply_effect(ctx)

    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [blocking, probe_hook(event, calls)])], blocking_threshold_ms=20
    )
    with capture_logs() as logs:
        effect = await run_mode(event, registry)

    assert effect is False
    assert calls == ["probe"]
    stats = stats_of(registry, event, "blocker")
    assert (stats.failures, stats.timeouts, stats.blocked_loop) == (1, 1, 1)
    assert [entry["event"] for entry in logs if entry.get("hook") == "blocker"] == [
        "hook blocked the event loop",
        "hook timed out",
    ]


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_isolation_synchronous_overrun_of_the_timeout_is_a_timeout(event):
    @hook(event, name="slow", timeout_ms=20)
    async def slow(ctx):
        time.sleep(0.04)
        apply_effect(ctx)

    # The step stays under the blocking threshold: it is only the timeout that it misses.
    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])], blocking_threshold_ms=1000)

    assert await run_mode(event, registry) is False
    stats = stats_of(registry, event, "slow")
    assert (stats.failures, stats.timeouts, stats.blocked_loop) == (1, 1, 0)


@pytest.mark.asyncio
async def test_isolation_short_synchronous_work_is_not_blocking():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def quick(ctx):
        time.sleep(0.005)
        await asyncio.sleep(0)
        time.sleep(0.005)
        ctx.suppress = True

    registry = HookRegistry.from_plugins([stub_plugin("p", [quick])], blocking_threshold_ms=2000)

    assert await run_mode(EVENT_MESSAGE_RECEIVED, registry) is True
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.blocked_loop == 0


@pytest.mark.asyncio
async def test_isolation_failure_logs_name_plugin_hook_and_event():
    @hook(EVENT_MESSAGE_RECEIVED, name="explodes")
    async def explodes(ctx):
        raise ValueError("kaboom")

    registry = HookRegistry.from_plugins([stub_plugin("demo", [explodes])])
    with capture_logs() as logs:
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    (entry,) = [e for e in logs if e["event"] == "hook failed"]
    assert entry["plugin"] == "demo"
    assert entry["hook"] == "explodes"
    assert entry["hook_event"] == EVENT_MESSAGE_RECEIVED
    assert entry["error"] == "ValueError: kaboom"


@pytest.mark.asyncio
async def test_isolation_long_error_text_is_truncated():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def verbose(ctx):
        raise ValueError("x" * 5000)

    registry = HookRegistry.from_plugins([stub_plugin("p", [verbose])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    last_error = registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.last_error
    assert last_error.startswith("ValueError: xxx")
    assert len(last_error) <= 300
