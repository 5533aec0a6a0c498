"""The circuit breaker: 5 consecutive failures skip a hook for 5 minutes; a success resets the count."""

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    BeforeResponseContext,
    HookRegistry,
    HookStats,
    MessageEnrichContext,
    MessageReceivedContext,
    hook,
)
from mindroom.hooks import breaker as breaker_module
from mindroom.hooks.breaker import CircuitBreaker
from mindroom.hooks.execution import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD, emit, emit_collect, emit_transform
from tests.hooks.support import stub_plugin


@pytest.fixture
def clock(monkeypatch):
    """A controllable monotonic clock for the hook runtime."""
    now = [10_000.0]
    monkeypatch.setattr(breaker_module, "now", lambda: now[0])
    return now


class Switch:
    """A hook whose behaviour the test flips between failing and succeeding."""

    def __init__(self, name="flaky", event=EVENT_MESSAGE_RECEIVED, **kwargs):
        self.fail = True
        self.calls = 0

        @hook(event, name=name, **kwargs)
        async def callback(ctx):
            self.calls += 1
            if self.fail:
                raise RuntimeError("boom")

        self.callback = callback


async def fire(registry, times=1):
    for _ in range(times):
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())


def test_breaker_constants_match_spec():
    assert BREAKER_THRESHOLD == 5
    assert BREAKER_COOLDOWN_S == 300.0


@pytest.mark.asyncio
async def test_breaker_opens_after_five_consecutive_failures(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    await fire(registry, BREAKER_THRESHOLD - 1)
    assert switch.calls == 4
    await fire(registry)
    assert switch.calls == 5
    await fire(registry, 3)

    assert switch.calls == 5
    stats = registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats
    assert stats.skipped == 3
    assert stats.trips == 1


@pytest.mark.asyncio
async def test_breaker_skips_for_five_minutes_then_runs_again(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])
    await fire(registry, BREAKER_THRESHOLD)

    clock[0] += BREAKER_COOLDOWN_S - 1
    await fire(registry)
    assert switch.calls == 5

    clock[0] += 1
    switch.fail = False
    await fire(registry)
    assert switch.calls == 6
    await fire(registry)
    assert switch.calls == 7
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.consecutive_failures == 0


@pytest.mark.asyncio
async def test_breaker_failure_after_cooldown_reopens_immediately(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])
    await fire(registry, BREAKER_THRESHOLD)

    clock[0] += BREAKER_COOLDOWN_S
    await fire(registry)
    assert switch.calls == 6
    await fire(registry)

    assert switch.calls == 6
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.trips == 2


@pytest.mark.asyncio
async def test_breaker_success_resets_consecutive_count(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    await fire(registry, BREAKER_THRESHOLD - 1)
    switch.fail = False
    await fire(registry)
    switch.fail = True
    await fire(registry, BREAKER_THRESHOLD - 1)

    stats = registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats
    assert switch.calls == 2 * BREAKER_THRESHOLD - 1
    assert stats.trips == 0
    await fire(registry)
    assert switch.calls == 2 * BREAKER_THRESHOLD
    assert stats.failures == 2 * BREAKER_THRESHOLD - 1
    assert stats.trips == 1
    await fire(registry)
    assert switch.calls == 2 * BREAKER_THRESHOLD
    assert stats.skipped == 1


@pytest.mark.asyncio
async def test_breaker_success_after_suspension_resets_count(clock):
    calls = []
    state = {"fail": True}

    @hook(EVENT_MESSAGE_RECEIVED)
    async def flaky(ctx):
        calls.append(1)
        await asyncio.sleep(0)
        if state["fail"]:
            raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [flaky])])
    await fire(registry, BREAKER_THRESHOLD - 1)
    state["fail"] = False
    await fire(registry)
    state["fail"] = True
    await fire(registry, BREAKER_THRESHOLD - 1)

    assert len(calls) == 2 * BREAKER_THRESHOLD - 1
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.trips == 0


@pytest.mark.asyncio
async def test_breaker_timeouts_count_as_failures(clock):
    calls = []

    @hook(EVENT_MESSAGE_RECEIVED, timeout_ms=10)
    async def slow(ctx):
        calls.append(1)
        await asyncio.sleep(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])
    await fire(registry, BREAKER_THRESHOLD + 2)

    assert len(calls) == BREAKER_THRESHOLD
    stats = registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats
    assert stats.timeouts == BREAKER_THRESHOLD
    assert stats.skipped == 2


@pytest.mark.asyncio
async def test_breaker_is_per_plugin_and_hook(clock):
    broken = Switch(name="shared")
    healthy = Switch(name="shared")
    healthy.fail = False
    other_broken = Switch(name="other")
    other_broken.fail = False
    registry = HookRegistry.from_plugins(
        [stub_plugin("a", [broken.callback, other_broken.callback]), stub_plugin("b", [healthy.callback])]
    )

    await fire(registry, BREAKER_THRESHOLD + 3)

    assert broken.calls == BREAKER_THRESHOLD
    assert healthy.calls == BREAKER_THRESHOLD + 3
    assert other_broken.calls == BREAKER_THRESHOLD + 3


@pytest.mark.asyncio
async def test_breaker_trip_is_logged(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    with capture_logs() as logs:
        await fire(registry, BREAKER_THRESHOLD + 1)

    trips = [entry for entry in logs if entry["event"] == "hook circuit breaker opened"]
    assert len(trips) == 1
    assert trips[0]["plugin"] == "p"
    assert trips[0]["hook"] == "flaky"
    assert trips[0]["consecutive_failures"] == BREAKER_THRESHOLD


@pytest.mark.asyncio
async def test_breaker_state_survives_registry_rebuild(clock):
    switch = Switch()
    old = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])
    await fire(old, BREAKER_THRESHOLD)

    new = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])], previous=old)
    await fire(new)

    assert switch.calls == BREAKER_THRESHOLD
    assert new.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.skipped == 1


@pytest.mark.asyncio
async def test_breaker_applies_in_collector_mode(clock):
    switch = Switch(event=EVENT_MESSAGE_ENRICH)
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    for _ in range(BREAKER_THRESHOLD + 2):
        await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert switch.calls == BREAKER_THRESHOLD


@pytest.mark.asyncio
async def test_breaker_applies_in_transformer_mode(clock):
    switch = Switch(event=EVENT_MESSAGE_BEFORE_RESPONSE)
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    for _ in range(BREAKER_THRESHOLD + 2):
        await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, BeforeResponseContext())

    assert switch.calls == BREAKER_THRESHOLD


@pytest.mark.asyncio
async def test_breaker_no_retries_each_emit_calls_a_failing_hook_once(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])

    for expected in range(1, BREAKER_THRESHOLD + 1):
        await fire(registry)
        assert switch.calls == expected


# -- the CircuitBreaker object on its own ----------------------------------------------------------------


def test_breaker_object_trips_on_the_fifth_failure_and_opens_for_the_cooldown():
    cell = CircuitBreaker()

    tripped = [cell.failure(100.0) for _ in range(BREAKER_THRESHOLD)]

    assert tripped == [False] * (BREAKER_THRESHOLD - 1) + [True]
    assert (cell.consecutive, cell.open_until, cell.trips) == (BREAKER_THRESHOLD, 100.0 + BREAKER_COOLDOWN_S, 1)
    assert cell.allows(100.0 + BREAKER_COOLDOWN_S - 0.001) is False
    assert cell.allows(100.0 + BREAKER_COOLDOWN_S) is True


def test_breaker_object_failure_while_open_does_not_trip_again():
    cell = CircuitBreaker()
    for _ in range(BREAKER_THRESHOLD):
        cell.failure(0.0)

    assert cell.failure(1.0) is False
    assert cell.trips == 1
    assert cell.open_until == BREAKER_COOLDOWN_S


def test_breaker_object_states_closed_open_half_open():
    cell = CircuitBreaker()
    assert cell.state(0.0) == "closed"
    cell.failure(0.0)
    assert cell.state(0.0) == "closed"
    for _ in range(BREAKER_THRESHOLD - 1):
        cell.failure(0.0)
    assert cell.state(1.0) == "open"
    assert cell.state(BREAKER_COOLDOWN_S) == "half-open"
    cell.success()
    assert cell.state(BREAKER_COOLDOWN_S) == "closed"
    assert (cell.consecutive, cell.open_until, cell.trips) == (0, 0.0, 1)


def test_breaker_object_reset_closes_and_keeps_the_trip_count():
    cell = CircuitBreaker()
    for _ in range(BREAKER_THRESHOLD):
        cell.failure(0.0)

    cell.reset()

    assert cell.allows(1.0) is True
    assert cell.state(1.0) == "closed"
    assert (cell.consecutive, cell.trips) == (0, 1)


@pytest.mark.asyncio
async def test_breaker_reset_lets_a_skipped_hook_run_again(clock):
    switch = Switch()
    registry = HookRegistry.from_plugins([stub_plugin("p", [switch.callback])])
    await fire(registry, BREAKER_THRESHOLD + 1)
    assert switch.calls == BREAKER_THRESHOLD

    registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.breaker.reset()
    await fire(registry)

    assert switch.calls == BREAKER_THRESHOLD + 1


def test_breaker_stats_keep_the_flat_names():
    stats = HookStats()
    for _ in range(BREAKER_THRESHOLD):
        stats.breaker.failure(5.0)
    stats.trips = 7

    assert (stats.consecutive_failures, stats.open_until, stats.trips) == (
        BREAKER_THRESHOLD,
        5.0 + BREAKER_COOLDOWN_S,
        7,
    )
    assert stats.breaker.trips == 7
