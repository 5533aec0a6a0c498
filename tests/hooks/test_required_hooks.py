"""`@hook(..., required=True)`: only on `agent:started`, and a failure fails the start."""

import asyncio

import pytest

import mindroom.hooks.breaker as breaker_module
from mindroom.hooks import (
    EVENT_AGENT_STARTED,
    EVENT_BOT_READY,
    AgentLifecycleContext,
    HookRegistry,
    get_hook_metadata,
    hook,
)
from mindroom.hooks.execution import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD, emit
from tests.hooks.support import stub_plugin


def started():
    return AgentLifecycleContext(entity_name="code")


@pytest.mark.parametrize("event", [EVENT_BOT_READY, "message:received", "tool:before_call", "todo:done"])
def test_required_is_refused_on_every_other_event(event):
    with pytest.raises(ValueError, match="agent:started"):
        hook(event, required=True)


def test_required_is_recorded_and_defaults_to_false():
    @hook(EVENT_AGENT_STARTED, required=True)
    async def must(ctx):
        pass

    @hook(EVENT_AGENT_STARTED)
    async def may(ctx):
        pass

    assert get_hook_metadata(must).required is True
    assert get_hook_metadata(may).required is False
    registry = HookRegistry.from_plugins([stub_plugin("vault", [must, may])])
    assert [h.required for h in registry.hooks_for(EVENT_AGENT_STARTED)] == [True, False]


@pytest.mark.asyncio
async def test_required_failure_raises_and_stops_the_remaining_hooks():
    ran = []

    @hook(EVENT_AGENT_STARTED, priority=1)
    async def before(ctx):
        ran.append("before")

    @hook(EVENT_AGENT_STARTED, priority=2, required=True)
    async def unlock_vault(ctx):
        raise OSError("vault sealed")

    @hook(EVENT_AGENT_STARTED, priority=3)
    async def after(ctx):
        ran.append("after")

    registry = HookRegistry.from_plugins([stub_plugin("vault", [before, unlock_vault, after])])

    with pytest.raises(RuntimeError, match=r"^Required startup hook vault:unlock_vault failed$"):
        await emit(registry, EVENT_AGENT_STARTED, started())
    assert ran == ["before"]


@pytest.mark.asyncio
async def test_required_timeout_counts_as_a_failure():
    @hook(EVENT_AGENT_STARTED, required=True, timeout_ms=20)
    async def slow(ctx):
        await asyncio.sleep(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])

    with pytest.raises(RuntimeError, match="Required startup hook p:slow failed"):
        await emit(registry, EVENT_AGENT_STARTED, started())


@pytest.mark.asyncio
async def test_a_failing_hook_that_is_not_required_still_does_not_raise():
    ran = []

    @hook(EVENT_AGENT_STARTED, priority=1)
    async def optional(ctx):
        raise OSError("nope")

    @hook(EVENT_AGENT_STARTED, priority=2, required=True)
    async def must(ctx):
        ran.append("must")

    await emit(HookRegistry.from_plugins([stub_plugin("p", [optional, must])]), EVENT_AGENT_STARTED, started())

    assert ran == ["must"]


@pytest.mark.asyncio
async def test_required_hook_is_never_skipped_by_an_open_breaker(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(breaker_module, "now", lambda: now[0])
    calls = []

    @hook(EVENT_AGENT_STARTED, required=True)
    async def flaky(ctx):
        calls.append(now[0])
        if len(calls) <= BREAKER_THRESHOLD:
            raise OSError("down")

    registry = HookRegistry.from_plugins([stub_plugin("p", [flaky])])
    for _ in range(BREAKER_THRESHOLD):
        with pytest.raises(RuntimeError):
            await emit(registry, EVENT_AGENT_STARTED, started())
    assert registry.all_hooks()[0].stats.breaker.open_until > now[0]

    now[0] += BREAKER_COOLDOWN_S / 2
    await emit(registry, EVENT_AGENT_STARTED, started())

    assert len(calls) == BREAKER_THRESHOLD + 1


@pytest.mark.asyncio
async def test_required_hook_in_monitor_mode_does_not_fail_the_start():
    @hook(EVENT_AGENT_STARTED, required=True)
    async def trial(ctx):
        raise OSError("would fail")

    registry = HookRegistry.from_plugins([stub_plugin("p", [trial], hooks={"trial": {"mode": "monitor"}})])

    await emit(registry, EVENT_AGENT_STARTED, started())
