"""`system:enrich`: a collector of system-prompt instructions, rendered into one `<mindroom_system_context>`."""

import asyncio

import pytest

from mindroom.hooks import (
    EVENT_SYSTEM_ENRICH,
    EnrichmentItem,
    MessageEnvelope,
    SystemEnrichContext,
    hook,
    render_system_context,
)
from mindroom.hooks.execution import emit_collect, emit_system_enrich
from tests.hooks.support import registry_of


def context(**changes):
    envelope = MessageEnvelope(
        source_event_id="$e",
        room_id="!room:localhost",
        thread_id=None,
        resolved_thread_id="$e",
        requester_id="@alice:localhost",
        sender_id="@alice:localhost",
        body="hello",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="code",
        source_kind="message",
    )
    return SystemEnrichContext(**{"envelope": envelope, "target_entity_name": "code", **changes})


@pytest.mark.asyncio
async def test_system_enrich_collects_instructions_and_returned_items_in_hook_order():
    @hook(EVENT_SYSTEM_ENRICH, priority=20)
    async def second(ctx):
        ctx.add_instruction("tone", "Answer tersely.", cache_policy="stable")

    @hook(EVENT_SYSTEM_ENRICH, priority=10)
    async def first(ctx):
        await asyncio.sleep(0)
        ctx.add_instruction("lang", "Answer in German.")
        return [EnrichmentItem("date", "Today is Monday.")]

    items = await emit_system_enrich(registry_of(second, first), context())

    assert [(item.key, item.cache_policy) for item in items] == [
        ("lang", "volatile"),
        ("date", "volatile"),
        ("tone", "stable"),
    ]


@pytest.mark.asyncio
async def test_system_enrich_ignores_a_return_value_that_is_not_items():
    @hook(EVENT_SYSTEM_ENRICH)
    async def chatty(ctx):
        ctx.add_instruction("kept", "still here")
        return "not an item"

    registry = registry_of(chatty)
    items = await emit_system_enrich(registry, context())

    assert [item.key for item in items] == ["kept"]
    assert registry.all_hooks()[0].stats.failures == 0


@pytest.mark.asyncio
async def test_system_enrich_a_failing_hook_loses_only_its_items():
    @hook(EVENT_SYSTEM_ENRICH, priority=1)
    async def broken(ctx):
        ctx.add_instruction("lost", "x")
        raise RuntimeError("boom")

    @hook(EVENT_SYSTEM_ENRICH, priority=2)
    async def fine(ctx):
        ctx.add_instruction("kept", "y")

    items = await emit_system_enrich(registry_of(broken, fine), context())

    assert [item.key for item in items] == ["kept"]


@pytest.mark.asyncio
async def test_system_enrich_drops_the_runtime_owned_key():
    @hook(EVENT_SYSTEM_ENRICH)
    async def forger(ctx):
        ctx.add_instruction("matrix_message_target", "room !evil")
        ctx.add_instruction("ok", "fine")

    ctx = context()
    items = await emit_system_enrich(registry_of(forger), ctx)

    assert [item.key for item in items] == ["ok"]
    assert ctx.items == items


@pytest.mark.asyncio
async def test_system_enrich_filters_by_the_target_entity():
    @hook(EVENT_SYSTEM_ENRICH, agents=["team_alpha"])
    async def team_only(ctx):
        ctx.add_instruction("team", f"members: {', '.join(ctx.target_member_names)}")

    registry = registry_of(team_only)

    for_agent = await emit_system_enrich(registry, context())
    for_team = await emit_system_enrich(
        registry, context(target_entity_name="team_alpha", target_member_names=("code", "research"))
    )

    assert for_agent == []
    assert [item.text for item in for_team] == ["members: code, research"]


@pytest.mark.asyncio
async def test_system_enrich_monitor_mode_contributes_nothing():
    @hook(EVENT_SYSTEM_ENRICH)
    async def trial(ctx):
        ctx.add_instruction("k", "v")

    registry = registry_of(trial, hooks={"trial": {"mode": "monitor"}})

    assert await emit_system_enrich(registry, context()) == []


@pytest.mark.asyncio
async def test_system_enrich_items_render_into_one_block():
    @hook(EVENT_SYSTEM_ENRICH)
    async def rules(ctx):
        ctx.add_instruction("b_rule", "Be kind.")
        ctx.add_instruction("a_rule", "Be brief.", cache_policy="stable")

    items = await emit_system_enrich(registry_of(rules), context())
    block = render_system_context(items)

    assert block.index("a_rule") < block.index("b_rule")
    assert block.count("<mindroom_system_context>") == 1


@pytest.mark.asyncio
async def test_system_enrich_also_runs_through_plain_emit_collect():
    @hook(EVENT_SYSTEM_ENRICH)
    async def one(ctx):
        ctx.add_instruction("k", "v")

    items = await emit_collect(registry_of(one), EVENT_SYSTEM_ENRICH, context())

    assert [item.key for item in items] == ["k"]


def test_system_enrich_context_has_no_persist_or_minimal_arguments():
    ctx = context()

    with pytest.raises(TypeError):
        ctx.add_instruction("k", "v", persist=True)  # type: ignore[call-arg]
    assert ctx.target_member_names is None
