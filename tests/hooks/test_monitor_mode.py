"""Monitor mode (`mode: monitor` override): the hook runs, its effects are discarded and counted."""

import dataclasses

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_SCHEDULE_FIRED,
    EVENT_TOOL_BEFORE_CALL,
    BeforeResponseContext,
    EnrichmentItem,
    HookRegistry,
    MessageEnrichContext,
    MessageReceivedContext,
    ScheduleFiredContext,
    ToolBeforeCallContext,
    hook,
    hook_telemetry,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from tests.hooks.support import stub_plugin


def monitored(*callbacks, names=("watched",)):
    return HookRegistry.from_plugins([stub_plugin("p", callbacks, hooks={name: {"mode": "monitor"} for name in names})])


def effects(registry, name="watched"):
    return next(row.monitored_effects for row in hook_telemetry(registry) if row.hook_name == name)


@pytest.mark.asyncio
async def test_monitor_observer_suppress_is_discarded_and_counted():
    calls = []

    @hook(EVENT_MESSAGE_RECEIVED, name="watched")
    async def watched(ctx):
        calls.append(1)
        ctx.suppress = True

    registry = monitored(watched)
    ctx = MessageReceivedContext()
    with capture_logs() as logs:
        await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert calls == [1]
    assert ctx.suppress is False
    assert effects(registry) == 1
    entry = next(e for e in logs if e["event"] == "monitor mode discarded hook effect")
    assert (entry["plugin"], entry["hook"]) == ("p", "watched")


@pytest.mark.asyncio
async def test_monitor_observer_without_effect_is_not_counted():
    @hook(EVENT_MESSAGE_RECEIVED, name="watched")
    async def watched(ctx):
        pass

    registry = monitored(watched)
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert effects(registry) == 0
    assert hook_telemetry(registry)[0].calls == 1


@pytest.mark.asyncio
async def test_monitor_observer_schedule_rewrite_is_discarded():
    @hook(EVENT_SCHEDULE_FIRED, name="watched")
    async def watched(ctx):
        ctx.message_text = "rewritten"
        ctx.suppress = True

    registry = monitored(watched)
    ctx = ScheduleFiredContext(message_text="original")
    await emit(registry, EVENT_SCHEDULE_FIRED, ctx)

    assert (ctx.message_text, ctx.suppress) == ("original", False)
    assert effects(registry) == 1


@pytest.mark.asyncio
async def test_monitor_observer_does_not_discard_other_hooks_effects():
    @hook(EVENT_MESSAGE_RECEIVED, name="enforced", priority=1)
    async def enforced(ctx):
        ctx.suppress = True

    @hook(EVENT_MESSAGE_RECEIVED, name="watched", priority=2)
    async def watched(ctx):
        ctx.suppress = False

    registry = monitored(enforced, watched)
    ctx = MessageReceivedContext()
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is True
    assert effects(registry) == 1


@pytest.mark.asyncio
async def test_monitor_collector_items_are_discarded_and_counted():
    @hook(EVENT_MESSAGE_ENRICH, name="watched", priority=1)
    async def watched(ctx):
        ctx.add_metadata("added", "x")
        return EnrichmentItem(key="returned", text="y")

    @hook(EVENT_MESSAGE_ENRICH, name="enforced", priority=2)
    async def enforced(ctx):
        ctx.add_metadata("kept", "z")

    registry = monitored(watched, enforced)
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert [item.key for item in items] == ["kept"]
    assert effects(registry) == 1


@pytest.mark.asyncio
async def test_monitor_transformer_rewrite_and_suppress_are_discarded():
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, name="watched", priority=1)
    async def watched(ctx):
        ctx.draft.response_text = "rewritten"

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, name="suppressor", priority=2)
    async def suppressor(ctx):
        ctx.draft.suppress = True

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, name="replacer", priority=3)
    async def replacer(ctx):
        return dataclasses.replace(ctx.draft, response_text="replaced")

    registry = monitored(watched, suppressor, replacer, names=("watched", "suppressor", "replacer"))
    ctx = BeforeResponseContext()
    ctx.draft.response_text = "original"
    draft = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert draft.response_text == "original"
    assert draft.suppress is False
    assert [effects(registry, name) for name in ("watched", "suppressor", "replacer")] == [1, 1, 1]


@pytest.mark.asyncio
async def test_monitor_gate_decline_is_discarded_and_chain_continues():
    calls = []

    @hook(EVENT_TOOL_BEFORE_CALL, name="watched", priority=1)
    async def watched(ctx):
        ctx.decline("would block")

    @hook(EVENT_TOOL_BEFORE_CALL, name="after", priority=2)
    async def after(ctx):
        calls.append(ctx.declined)

    registry = monitored(watched, after)
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext(tool_name="shell"))

    assert ctx.declined is False
    assert ctx.decline_reason == ""
    assert calls == [False]
    assert effects(registry) == 1
    assert hook_telemetry(registry)[0].declines == 0


@pytest.mark.asyncio
async def test_monitor_fail_closed_gate_failure_does_not_decline():
    @hook(EVENT_TOOL_BEFORE_CALL, name="watched", fail_closed=True)
    async def watched(ctx):
        raise RuntimeError("down")

    registry = monitored(watched)
    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext(tool_name="shell"))

    assert ctx.declined is False
    assert hook_telemetry(registry)[0].failures == 1


@pytest.mark.asyncio
async def test_monitor_mode_is_reported_in_telemetry():
    @hook(EVENT_MESSAGE_RECEIVED, name="watched")
    async def watched(ctx):
        pass

    @hook(EVENT_MESSAGE_RECEIVED, name="enforced")
    async def enforced(ctx):
        pass

    registry = monitored(watched, enforced)

    assert {row.hook_name: row.mode for row in hook_telemetry(registry)} == {
        "watched": "monitor",
        "enforced": "enforce",
    }


@pytest.mark.asyncio
async def test_monitor_counts_every_emit():
    @hook(EVENT_MESSAGE_RECEIVED, name="watched")
    async def watched(ctx):
        ctx.suppress = True

    registry = monitored(watched)
    for _ in range(3):
        ctx = MessageReceivedContext()
        await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
        assert ctx.suppress is False

    assert effects(registry) == 3
