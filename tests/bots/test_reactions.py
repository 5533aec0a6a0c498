"""Reactions and replies routed through the pipeline: answers to approval cards, and `reaction:received`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mindroom.bots.approvals.desk import ApprovalSeat
from mindroom.hooks import EVENT_REACTION_RECEIVED, ApprovalRequest, hook
from tests.bots.bench import ALICE, BOB, LOBBY, MALLORY, Bench, registry_of, until

pytestmark = pytest.mark.asyncio

HELPER = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}
ROOT = "$question"


def request(timeout_s: float = 30.0) -> ApprovalRequest:
    return ApprovalRequest(
        prompt="it deletes files",
        timeout_s=timeout_s,
        tool_name="run_shell_command",
        arguments={"command": "rm -rf build"},
        agent_name="helper",
        room_id=LOBBY,
        thread_id=ROOT,
        requester_id=ALICE,
        correlation_id="turn-1",
        plugin_name="guard",
        hook_name="ask_first",
    )


async def pending_card(bench: Bench) -> tuple[asyncio.Future[bool], str]:
    """The helper asks on a card (as a turn's tool gate would); the pending answer and the card's event id."""
    client = bench.client("helper")
    seat = ApprovalSeat("helper", "Helper", client, LOBBY, ROOT, ROOT, "turn-1")
    waiting = asyncio.ensure_future(bench.desk.request(seat, request()))
    await until(lambda: client.messages)
    return waiting, client.messages[0].event_id


def in_thread_reply(bench: Bench, sender: str, card: str, body: str) -> Any:
    """A reply to the card inside its thread, as Element sends one (not the thread's fallback)."""
    relation = {"rel_type": "m.thread", "event_id": ROOT, "is_falling_back": False, "m.in_reply_to": {"event_id": card}}
    return bench.server.message(LOBBY, sender, body, extra_content={"m.relates_to": relation})


@pytest.mark.parametrize("approver", [ALICE, BOB], ids=["global-user", "room-user"])
async def test_reactions_an_authorized_check_mark_approves_the_card(make_bench, approver: str):
    bench = await make_bench(HELPER)
    waiting, card = await pending_card(bench)

    await bench.deliver(bench.server.reaction(LOBBY, approver, card, "✅"))
    await bench.settle()

    assert await waiting is True
    record = bench.desk.card(card)
    assert record is not None and (record.status, record.decided_by) == ("approved", approver)
    [edit] = bench.client("helper").edits
    assert edit.target_event_id == card and f"approved by {approver}" in edit.body


async def test_reactions_a_check_mark_from_someone_unauthorized_is_not_honoured(make_bench):
    bench = await make_bench(HELPER)
    waiting, card = await pending_card(bench)

    await bench.deliver(bench.server.reaction(LOBBY, MALLORY, card, "✅"))
    await bench.settle()

    record = bench.desk.card(card)
    assert record is not None and record.pending and not waiting.done()
    assert bench.client("helper").edits == []
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, card, "❌"))  # the one who may decides
    await bench.settle()
    assert await waiting is False
    assert bench.desk.card(card).decided_by == ALICE


async def test_reactions_a_bots_own_check_mark_is_not_honoured(make_bench):
    bench = await make_bench(HELPER)
    waiting, card = await pending_card(bench)

    await bench.deliver(bench.server.reaction(LOBBY, bench.user_id("router"), card, "✅"))
    await bench.settle()

    assert bench.desk.card(card).pending and not waiting.done()
    waiting.cancel()


async def test_reactions_a_reply_to_the_card_denies_with_its_text_and_starts_no_turn(make_bench, model_server):
    bench = await make_bench(HELPER)
    waiting, card = await pending_card(bench)

    await bench.deliver(in_thread_reply(bench, ALICE, card, "no, not now"))
    await bench.settle()

    assert await waiting is False
    record = bench.desk.card(card)
    assert (record.status, record.decided_by, record.reason) == ("denied", ALICE, "no, not now")
    assert model_server.requests == []  # the reply was an answer to the card, not a question


async def test_reactions_a_reply_to_the_card_from_someone_unauthorized_decides_nothing(make_bench, model_server):
    bench = await make_bench(HELPER)
    waiting, card = await pending_card(bench)

    await bench.deliver(in_thread_reply(bench, MALLORY, card, "yes, go ahead"))
    await bench.settle()

    assert bench.desk.card(card).pending and not waiting.done()
    assert model_server.requests == []
    waiting.cancel()


async def test_reactions_other_reactions_reach_hooks_once_from_the_owner_of_the_message(make_bench):
    seen: list[tuple[str, str]] = []

    @hook(EVENT_REACTION_RECEIVED)
    async def noticed(ctx: Any) -> None:
        seen.append((ctx.agent_name, ctx.reaction_key))

    bench = await make_bench(HELPER, registry=registry_of(noticed))
    answer = await bench.client("helper").send_message(LOBBY, "an answer", thread_root=ROOT)
    person = bench.server.message(LOBBY, ALICE, "a person's message")

    await bench.deliver(bench.server.reaction(LOBBY, ALICE, answer, "👍"))
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, person.event_id, "🎉"))
    await bench.deliver(bench.server.reaction(LOBBY, MALLORY, answer, "👎"))
    await bench.settle()

    assert sorted(seen) == [("helper", "👍"), ("router", "🎉")]


CAROL = "@carol:localhost"
OPS = "!ops:localhost"


async def two_room_bench(make_bench) -> Bench:
    """The helper's card is in the lobby; Carol may reach the agents only in `ops`, where the bots are too."""
    bench = await make_bench(
        HELPER, authorization={"room_permissions": {"lobby": [BOB], OPS: [CAROL]}, "global_users": [ALICE]}
    )
    for bot in bench.bots.values():
        await bot.join(OPS)
    return bench


async def test_reactions_a_reply_from_another_room_decides_nothing(make_bench, model_server):
    bench = await two_room_bench(make_bench)
    waiting, card = await pending_card(bench)

    await bench.deliver(bench.server.message(OPS, CAROL, "no way", reply_to=card))
    await bench.settle()

    assert bench.desk.card(card).pending and not waiting.done()
    assert bench.client("helper").edits == []
    waiting.cancel()


async def test_reactions_a_check_mark_from_another_room_decides_nothing(make_bench):
    bench = await two_room_bench(make_bench)
    waiting, card = await pending_card(bench)

    await bench.deliver(bench.server.reaction(OPS, CAROL, card, "✅"))
    await bench.deliver(bench.server.reaction(LOBBY, CAROL, card, "✅"))  # she may not decide in the lobby
    await bench.settle()

    assert bench.desk.card(card).pending and not waiting.done()
    await bench.deliver(bench.server.reaction(LOBBY, BOB, card, "✅"))
    await bench.settle()
    assert await waiting is True
    assert bench.desk.card(card).decided_by == BOB
