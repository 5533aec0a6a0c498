"""`hook_telemetry`: one read-only row per hook with counters, latency percentiles and breaker state."""

import asyncio
import dataclasses
import time

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    HookRegistry,
    HookTelemetry,
    MessageReceivedContext,
    ToolBeforeCallContext,
    hook,
    hook_telemetry,
)
from mindroom.hooks import breaker as breaker_module
from mindroom.hooks import invocation as invocation_module
from mindroom.hooks.execution import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD, emit, emit_gate
from mindroom.hooks.telemetry import format_hook_rows, hooks_report_text, ordered_telemetry
from mindroom.hooks.types import BUILTIN_EVENTS, PIPELINE_ORDER
from tests.hooks.support import stub_plugin


@pytest.fixture
def clock(monkeypatch):
    now = [50_000.0]
    monkeypatch.setattr(breaker_module, "now", lambda: now[0])
    return now


def row_for(registry, name):
    return next(row for row in hook_telemetry(registry) if row.hook_name == name)


def test_telemetry_row_describes_configuration():
    @hook(EVENT_MESSAGE_RECEIVED, name="scoped", priority=5, timeout_ms=250, agents=["b", "a"], rooms=["!r:l"])
    async def scoped(ctx):
        pass

    @hook(EVENT_TOOL_BEFORE_CALL, name="guard", fail_closed=True)
    async def guard(ctx):
        pass

    registry = HookRegistry.from_plugins([stub_plugin("p", [scoped, guard])])

    scoped_row = row_for(registry, "scoped")
    assert isinstance(scoped_row, HookTelemetry)
    assert scoped_row.event_name == EVENT_MESSAGE_RECEIVED
    assert scoped_row.execution_mode == "observer"
    assert scoped_row.plugin_name == "p"
    assert (scoped_row.priority, scoped_row.timeout_ms) == (5, 250)
    assert scoped_row.agents == ("a", "b")
    assert scoped_row.rooms == ("!r:l",)
    assert scoped_row.mode == "enforce"
    assert scoped_row.fail_closed is False
    guard_row = row_for(registry, "guard")
    assert guard_row.execution_mode == "gate"
    assert guard_row.timeout_ms == 200
    assert guard_row.agents is None
    assert guard_row.fail_closed is True


def test_telemetry_fresh_hook_has_zero_counters():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def idle(ctx):
        pass

    row = hook_telemetry(HookRegistry.from_plugins([stub_plugin("p", [idle])]))[0]

    assert (row.calls, row.failures, row.timeouts, row.declines, row.skipped, row.breaker_trips) == (0, 0, 0, 0, 0, 0)
    assert row.p50_ms is None
    assert row.p95_ms is None
    assert row.last_error is None
    assert row.breaker_state == "closed"


def test_telemetry_rows_follow_event_then_execution_order():
    @hook(EVENT_MESSAGE_RECEIVED, name="second", priority=2)
    async def second(ctx):
        pass

    @hook(EVENT_MESSAGE_RECEIVED, name="first", priority=1)
    async def first(ctx):
        pass

    @hook(EVENT_MESSAGE_ENRICH, name="enrich")
    async def enrich(ctx):
        pass

    rows = hook_telemetry(HookRegistry.from_plugins([stub_plugin("p", [second, first, enrich])]))

    assert [(row.event_name, row.hook_name) for row in rows] == [
        (EVENT_MESSAGE_ENRICH, "enrich"),
        (EVENT_MESSAGE_RECEIVED, "first"),
        (EVENT_MESSAGE_RECEIVED, "second"),
    ]


@pytest.mark.asyncio
async def test_telemetry_counts_calls_failures_timeouts_and_last_error():
    state = {"mode": "ok"}

    @hook(EVENT_MESSAGE_RECEIVED, name="varied", timeout_ms=20)
    async def varied(ctx):
        if state["mode"] == "raise":
            raise KeyError("missing")
        if state["mode"] == "hang":
            await asyncio.sleep(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [varied])])
    for mode in ["ok", "raise", "ok", "hang", "ok"]:
        state["mode"] = mode
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    row = row_for(registry, "varied")
    assert row.calls == 5
    assert row.failures == 2
    assert row.timeouts == 1
    assert row.last_error == "TimeoutError"


@pytest.mark.asyncio
async def test_telemetry_last_error_keeps_the_message():
    @hook(EVENT_MESSAGE_RECEIVED, name="broken")
    async def broken(ctx):
        raise KeyError("missing")

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert row_for(registry, "broken").last_error == "KeyError: 'missing'"


@pytest.mark.asyncio
async def test_telemetry_counts_declines():
    @hook(EVENT_TOOL_BEFORE_CALL, name="deny")
    async def deny(ctx):
        if ctx.tool_name == "shell":
            ctx.decline("no shell")

    registry = HookRegistry.from_plugins([stub_plugin("p", [deny])])
    for tool in ["shell", "read", "shell"]:
        await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext(tool_name=tool))

    row = row_for(registry, "deny")
    assert (row.calls, row.declines, row.failures) == (3, 2, 0)


@pytest.mark.asyncio
async def test_telemetry_p50_and_p95_follow_durations(monkeypatch):
    fake = [0.0]
    monkeypatch.setattr(invocation_module, "_perf", lambda: fake[0])
    state = {"ms": 0}

    @hook(EVENT_MESSAGE_RECEIVED, name="timed")
    async def timed(ctx):
        fake[0] += state["ms"] / 1000.0

    registry = HookRegistry.from_plugins([stub_plugin("p", [timed])], blocking_threshold_ms=10**9)
    for ms in range(1, 101):
        state["ms"] = ms
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    row = row_for(registry, "timed")
    assert row.p50_ms == pytest.approx(50.5, abs=1)
    assert row.p95_ms == pytest.approx(95, abs=1)


@pytest.mark.asyncio
async def test_telemetry_breaker_state_open_half_open_closed(clock):
    state = {"fail": True}

    @hook(EVENT_MESSAGE_RECEIVED, name="flaky")
    async def flaky(ctx):
        if state["fail"]:
            raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [flaky])])
    for _ in range(BREAKER_THRESHOLD - 1):
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    assert row_for(registry, "flaky").breaker_state == "closed"

    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    row = row_for(registry, "flaky")
    assert row.breaker_state == "open"
    assert (row.breaker_trips, row.skipped) == (1, 1)

    clock[0] += BREAKER_COOLDOWN_S
    assert row_for(registry, "flaky").breaker_state == "half-open"

    state["fail"] = False
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    assert row_for(registry, "flaky").breaker_state == "closed"


@pytest.mark.asyncio
async def test_telemetry_counts_blocked_loop():
    @hook(EVENT_MESSAGE_RECEIVED, name="blocker")
    async def blocker(ctx):
        time.sleep(0.03)

    registry = HookRegistry.from_plugins([stub_plugin("p", [blocker])], blocking_threshold_ms=10)
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    row = row_for(registry, "blocker")
    assert (row.blocked_loop, row.failures) == (1, 0)


@pytest.mark.asyncio
async def test_telemetry_carried_over_through_previous_registry():
    @hook(EVENT_MESSAGE_RECEIVED, name="flaky")
    async def flaky(ctx):
        raise RuntimeError("old code")

    old = HookRegistry.from_plugins([stub_plugin("p", [flaky])])
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    @hook(EVENT_MESSAGE_RECEIVED, name="flaky")
    async def fixed(ctx):
        pass

    new = HookRegistry.from_plugins([stub_plugin("p", [fixed])], previous=old)
    carried = row_for(new, "flaky")
    assert (carried.calls, carried.failures, carried.last_error) == (2, 2, "RuntimeError: old code")

    await emit(new, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    after = row_for(new, "flaky")
    assert (after.calls, after.failures) == (3, 2)
    assert after.p50_ms is not None


@pytest.mark.asyncio
async def test_telemetry_rows_are_snapshots():
    @hook(EVENT_MESSAGE_RECEIVED, name="counted")
    async def counted(ctx):
        pass

    registry = HookRegistry.from_plugins([stub_plugin("p", [counted])])
    before = row_for(registry, "counted")
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert before.calls == 0
    assert row_for(registry, "counted").calls == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.calls = 5


def test_telemetry_of_empty_registry_is_empty():
    assert hook_telemetry(HookRegistry.empty()) == []


# -- pipeline order and the plain-text table -----------------------------------------------------------


def _demo_registry():
    @hook("tool:before_call", name="gate")
    async def gate(ctx):
        pass

    @hook("demo:thing", name="custom")
    async def custom(ctx):
        pass

    @hook("aaa:first", name="early_custom")
    async def early_custom(ctx):
        pass

    @hook("message:after_response", name="after")
    async def after(ctx):
        pass

    @hook("message:received", name="first", priority=5, agents=["assistant"])
    async def first(ctx):
        pass

    @hook("message:received", name="second", priority=50, rooms=["!r:l"])
    async def second(ctx):
        pass

    @hook("message:enrich", name="enrich")
    async def enrich(ctx):
        pass

    return HookRegistry.from_plugins([stub_plugin("demo", [gate, custom, early_custom, after, first, second, enrich])])


def test_telemetry_pipeline_order_lists_every_builtin_event_once():
    assert sorted(PIPELINE_ORDER) == sorted(BUILTIN_EVENTS)
    assert len(PIPELINE_ORDER) == len(set(PIPELINE_ORDER)) == 23
    message_events = [event for event in PIPELINE_ORDER if event.startswith("message:")]
    assert message_events == [
        "message:received",
        "message:enrich",
        "message:before_response",
        "message:final_response_transform",
        "message:after_response",
        "message:cancelled",
    ]


def test_telemetry_pipeline_order_puts_each_newer_event_where_the_turn_meets_it():
    rank = {event: index for index, event in enumerate(PIPELINE_ORDER)}

    assert rank["message:enrich"] < rank["system:enrich"] < rank["message:before_response"]
    assert rank["compaction:before"] < rank["compaction:after"] < rank["message:before_response"]
    assert rank["message:after_response"] < rank["session:started"] < rank["agent:started"]
    assert rank["tool:before_call"] < rank["tool:environment"] < rank["tool:after_call"]
    assert rank["reaction:received"] < rank["room:member_joined"] < rank["room:member_left"]


def test_telemetry_ordered_rows_follow_the_pipeline_then_custom_events_by_name():
    rows = ordered_telemetry(hook_telemetry(_demo_registry()))

    assert [(row.event_name, row.hook_name) for row in rows] == [
        ("message:received", "first"),
        ("message:received", "second"),
        ("message:enrich", "enrich"),
        ("message:after_response", "after"),
        ("tool:before_call", "gate"),
        ("aaa:first", "early_custom"),
        ("demo:thing", "custom"),
    ]


def test_telemetry_format_hook_rows_one_line_per_hook_under_its_event():
    text = format_hook_rows(ordered_telemetry(hook_telemetry(_demo_registry())))
    lines = text.splitlines()

    assert lines[0] == "message:received (observer)"
    assert lines[1] == (
        "  demo:first priority=5 timeout=15000ms mode=enforce agents=assistant breaker=closed"
        " calls=0 failures=0 timeouts=0 declines=0 p95=-ms"
    )
    assert lines[2].startswith("  demo:second priority=50 timeout=15000ms mode=enforce rooms=!r:l breaker=closed")
    headers = [line.split(" ")[0] for line in lines if not line.startswith(" ")]
    assert headers == [
        "message:received",
        "message:enrich",
        "message:after_response",
        "tool:before_call",
        "aaa:first",
        "demo:thing",
    ]


def test_telemetry_format_hook_rows_without_rows():
    assert format_hook_rows([]) == "No hooks are registered."
    assert hooks_report_text(HookRegistry.empty()) == "No hooks are registered."


@pytest.mark.asyncio
async def test_telemetry_report_text_shows_counters_and_fail_closed():
    @hook(EVENT_TOOL_BEFORE_CALL, name="guard", fail_closed=True)
    async def guard(ctx):
        ctx.decline("no")

    registry = HookRegistry.from_plugins([stub_plugin("p", [guard])])
    await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext(tool_name="t"))

    text = hooks_report_text(registry)

    assert text.splitlines()[0] == "tool:before_call (gate)"
    assert " mode=enforce fail-closed breaker=closed calls=1 failures=0 timeouts=0 declines=1 p95=" in text
    assert text.endswith("ms")
