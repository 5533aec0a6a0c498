"""Fail-closed gates: a broken safety gate declines the tool call instead of letting it through."""

import asyncio
import time

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, HookRegistry, ToolBeforeCallContext, hook, hook_telemetry
from mindroom.hooks import breaker as breaker_module
from mindroom.hooks.execution import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD, emit_gate
from tests.hooks.support import stub_plugin


def tool_ctx():
    return ToolBeforeCallContext(
        tool_name="shell",
        arguments={"command": "ls"},
        agent_name="code",
        room_id="!room:localhost",
        thread_id=None,
        requester_id="@user:localhost",
        session_id=None,
    )


@pytest.fixture
def clock(monkeypatch):
    now = [5_000.0]
    monkeypatch.setattr(breaker_module, "now", lambda: now[0])
    return now


def failing_guard(calls, *, name="guard", fail_closed=True, **kwargs):
    @hook(EVENT_TOOL_BEFORE_CALL, name=name, fail_closed=fail_closed, **kwargs)
    async def guard(ctx):
        calls.append(1)
        raise RuntimeError("policy server down")

    return guard


@pytest.mark.asyncio
async def test_fail_closed_raising_gate_declines_with_reason_naming_the_hook():
    registry = HookRegistry.from_plugins([stub_plugin("safety", [failing_guard([], name="shell-guard")])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is True
    assert "safety:shell-guard" in ctx.decline_reason
    assert hook_telemetry(registry)[0].declines == 1


@pytest.mark.asyncio
async def test_fail_closed_timed_out_gate_declines():
    @hook(EVENT_TOOL_BEFORE_CALL, name="slow-guard", fail_closed=True, timeout_ms=20)
    async def slow_guard(ctx):
        await asyncio.sleep(5)

    registry = HookRegistry.from_plugins([stub_plugin("safety", [slow_guard])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is True
    assert "safety:slow-guard" in ctx.decline_reason


@pytest.mark.asyncio
async def test_fail_closed_gate_blocking_past_its_timeout_declines():
    @hook(EVENT_TOOL_BEFORE_CALL, name="blocking-guard", fail_closed=True, timeout_ms=20)
    async def blocking_guard(ctx):
        time.sleep(0.04)

    registry = HookRegistry.from_plugins([stub_plugin("safety", [blocking_guard])], blocking_threshold_ms=10)
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is True
    assert "safety:blocking-guard" in ctx.decline_reason


@pytest.mark.asyncio
async def test_fail_closed_gate_blocking_within_its_timeout_is_only_reported():
    @hook(EVENT_TOOL_BEFORE_CALL, name="blocking-guard", fail_closed=True, timeout_ms=2000)
    async def blocking_guard(ctx):
        time.sleep(0.04)

    registry = HookRegistry.from_plugins([stub_plugin("safety", [blocking_guard])], blocking_threshold_ms=10)
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is False
    stats = registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats
    assert (stats.blocked_loop, stats.failures) == (1, 0)


@pytest.mark.asyncio
async def test_fail_closed_replaces_a_half_made_decline_reason():
    @hook(EVENT_TOOL_BEFORE_CALL, name="guard", fail_closed=True)
    async def guard(ctx):
        ctx.decline("partial")
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("safety", [guard])])
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert ctx.declined is True
    assert "safety:guard" in ctx.decline_reason
    assert "partial" not in ctx.decline_reason


@pytest.mark.asyncio
async def test_fail_closed_set_by_config_override():
    registry = HookRegistry.from_plugins(
        [stub_plugin("safety", [failing_guard([], fail_closed=False)], hooks={"guard": {"fail_closed": True}})]
    )

    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is True


@pytest.mark.asyncio
async def test_fail_closed_can_be_turned_off_by_config_override():
    registry = HookRegistry.from_plugins(
        [stub_plugin("safety", [failing_guard([])], hooks={"guard": {"fail_closed": False}})]
    )

    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is False


@pytest.mark.asyncio
async def test_fail_closed_stops_the_chain():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL, priority=2)
    async def later(ctx):
        calls.append("later")

    registry = HookRegistry.from_plugins([stub_plugin("safety", [failing_guard([], priority=1), later])])
    await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    assert calls == []


@pytest.mark.asyncio
async def test_fail_closed_gate_that_allows_does_not_decline():
    @hook(EVENT_TOOL_BEFORE_CALL, fail_closed=True)
    async def guard(ctx):
        await asyncio.sleep(0)

    registry = HookRegistry.from_plugins([stub_plugin("safety", [guard])])

    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is False


@pytest.mark.asyncio
async def test_fail_closed_keeps_declining_while_breaker_open(clock):
    calls = []
    registry = HookRegistry.from_plugins([stub_plugin("safety", [failing_guard(calls)])])

    with capture_logs() as logs:
        for _ in range(BREAKER_THRESHOLD):
            assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is True

    trips = [entry for entry in logs if entry["event"] == "hook circuit breaker opened"]
    assert len(trips) == 1
    assert trips[0]["log_level"] == "error"
    assert (trips[0]["plugin"], trips[0]["hook"]) == ("safety", "guard")

    for _ in range(3):
        clock[0] += 60
        ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())
        assert ctx.declined is True
        assert "safety:guard" in ctx.decline_reason
    assert len(calls) == BREAKER_THRESHOLD
    row = hook_telemetry(registry)[0]
    assert row.breaker_state == "open"
    assert row.skipped == 3
    assert row.declines == BREAKER_THRESHOLD + 3


@pytest.mark.asyncio
async def test_fail_closed_allows_again_after_cooldown_and_success(clock):
    state = {"fail": True}

    @hook(EVENT_TOOL_BEFORE_CALL, name="guard", fail_closed=True)
    async def guard(ctx):
        if state["fail"]:
            raise RuntimeError("down")

    registry = HookRegistry.from_plugins([stub_plugin("safety", [guard])])
    for _ in range(BREAKER_THRESHOLD):
        await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())

    state["fail"] = False
    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is True
    clock[0] += BREAKER_COOLDOWN_S
    assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is False
    assert hook_telemetry(registry)[0].breaker_state == "closed"


@pytest.mark.asyncio
async def test_fail_open_gate_breaker_trip_is_a_warning(clock):
    registry = HookRegistry.from_plugins([stub_plugin("safety", [failing_guard([], fail_closed=False)])])

    with capture_logs() as logs:
        for _ in range(BREAKER_THRESHOLD + 1):
            assert (await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, tool_ctx())).declined is False

    trips = [entry for entry in logs if entry["event"] == "hook circuit breaker opened"]
    assert [entry["log_level"] for entry in trips] == ["warning"]


def test_fail_closed_is_refused_outside_gate_events():
    with pytest.raises(ValueError, match="fail_closed"):
        hook("message:enrich", fail_closed=True)
