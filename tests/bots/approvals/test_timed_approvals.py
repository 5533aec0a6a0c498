"""Timed approvals at the desk: a card's grant lets the person's later calls of the tool through without a card
until it ends, `!auto_approve` windows do so for every call, and both outlive the desk that gave them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY, ApprovalDesk, ApprovalSeat
from mindroom.bots.approvals.timed_approvals import TIMED_ALLOW_KEYS, TimedApprovals, timed_seconds
from mindroom.config.main import Config
from mindroom.hooks import ApprovalRequest
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.state.sqlite.grants import SqliteGrantStore
from mindroom.tool_system.approval_grants import AUTO_APPROVE_OPTIONS
from mindroom.tool_system.approval_rules import APPROVAL_RULES_PLUGIN
from tests.bots.approvals.test_desk import ALICE, ROOM, RecordingClient, until

pytestmark = pytest.mark.asyncio

BOB = "@bob:localhost"
CONFIG = Config.model_validate({"agents": {"helper": {"display_name": "Helper"}}})


class Desks:
    """Desks over one data folder (a second one is the daemon after a restart), sharing a config cell."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.config = CONFIG
        self.opened: list[ApprovalDesk] = []
        self.now = time.time()

    def open(self) -> ApprovalDesk:
        timed = TimedApprovals(SqliteGrantStore(self.tmp_path / "grants.db"), lambda: self.config)
        timed.clock = lambda: self.now
        desk = ApprovalDesk(SqliteApprovalStore(self.tmp_path / "approvals.db"), timed)
        self.opened.append(desk)
        return desk

    def close(self) -> None:
        for desk in self.opened:
            desk.store.close()
            assert desk.timed is not None
            desk.timed.store.close()


@pytest.fixture
def desks(tmp_path: Path) -> Iterator[Desks]:
    desks = Desks(tmp_path)
    yield desks
    desks.close()


def seat(client: RecordingClient, turn: str, *, agent: str = "helper", thread: str | None = "$root") -> ApprovalSeat:
    return ApprovalSeat(agent, agent.title(), client, ROOM, thread, "$question", turn)  # type: ignore[arg-type]


def rule_ask(
    tool: str = "think", *, requester: str = ALICE, plugin: str = APPROVAL_RULES_PLUGIN, **arguments: Any
) -> ApprovalRequest:
    return ApprovalRequest(
        prompt="the approval rule 'th*' asks first",
        timeout_s=30,
        tool_name=tool,
        arguments=arguments or {"thought": "plan"},
        agent_name="helper",
        room_id=ROOM,
        thread_id="$root",
        requester_id=requester,
        correlation_id="turn",
        plugin_name=plugin,
        hook_name="th*",
    )


async def card_of(desk: ApprovalDesk, client: RecordingClient, ask_seat: ApprovalSeat, request: ApprovalRequest):
    """Ask, wait until the card is posted; returns the waiting call and the card's record."""
    posted = len(client.sent)
    waiting = asyncio.ensure_future(desk.request(ask_seat, request))
    await until(lambda: len(client.sent) > posted)
    card = desk.pending_card(f"$card{posted + 1}")
    assert card is not None
    return waiting, card


async def stop(waiting: asyncio.Future[bool]) -> None:
    """End a call still waiting on its card (as a daemon stopping does)."""
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)


async def granted(desk: ApprovalDesk, client: RecordingClient, seconds: int = 600) -> None:
    """A first call of `think` asks; Alice allows it for `seconds` from its card."""
    waiting, card = await card_of(desk, client, seat(client, "turn-1"), rule_ask())
    assert await desk.decide(client, card, "approved", ALICE, auto_approve_s=seconds) is True
    assert await waiting is True


async def test_timed_keys_are_the_offered_durations_with_or_without_the_variation_selector():
    assert tuple(TIMED_ALLOW_KEYS.values()) == AUTO_APPROVE_OPTIONS == (300, 600, 1800)
    assert [timed_seconds(key) for key in ("5️⃣", "5\u20e3", "🔟", "🕧", "✅", "6️⃣")] == [300, 300, 600, 1800, None, None]


async def test_grant_a_rules_card_in_a_thread_offers_a_timed_approval(desks):
    desk, client = desks.open(), RecordingClient()

    waiting, _card = await card_of(desk, client, seat(client, "turn-1"), rule_ask())

    (sent,) = client.sent
    assert sent["extra_content"][APPROVAL_CONTENT_KEY]["auto_approve_options"] == [300, 600, 1800]
    assert "react 5️⃣ 5 min, 🔟 10 min, 🕧 30 min" in sent["body"]
    await stop(waiting)


@pytest.mark.parametrize(
    ("thread", "request_"),
    [
        (None, rule_ask()),  # not in a thread
        ("$root", rule_ask(plugin="guard")),  # a plugin's question, not the rules'
        ("$root", rule_ask(thought="x" * 700)),  # the card cannot show the arguments whole
    ],
    ids=["no-thread", "plugin-card", "cut-arguments"],
)
async def test_grant_is_not_offered_where_it_would_not_hold(desks, thread, request_):
    desk, client = desks.open(), RecordingClient()

    waiting, card = await card_of(desk, client, seat(client, "turn-1", thread=thread), request_)

    assert "auto_approve_options" not in client.sent[0]["extra_content"][APPROVAL_CONTENT_KEY]
    assert await desk.decide(client, card, "approved", ALICE, auto_approve_s=600) is False  # ignored
    assert desk.pending_card(card.card_event_id) is not None
    await stop(waiting)


async def test_grant_lets_later_calls_through_without_a_card_until_it_expires(desks):
    desk, client = desks.open(), RecordingClient()
    await granted(desk, client)

    edit = client.edits[-1]
    wire = edit["extra_content"][APPROVAL_CONTENT_KEY]["auto_approval"]
    assert edit["body"].startswith(
        f"🔐 Helper wants to run think: the approval rule 'th*' asks first — ✅ approved by {ALICE}."
    )
    assert "think runs without asking in this thread" in edit["body"]
    assert set(wire) == {"grant_id", "expires_at", "revoked_at"} and wire["revoked_at"] is None

    assert await desk.request(seat(client, "turn-2"), rule_ask(thought="another plan")) is True
    assert len(client.sent) == 1  # no second card

    desks.now += 601
    waiting, _card = await card_of(desk, client, seat(client, "turn-3"), rule_ask())
    assert len(client.sent) == 2  # expired: asked again
    await stop(waiting)


@pytest.mark.parametrize(
    ("ask_seat", "request_"),
    [
        ({"thread": "$other"}, rule_ask()),
        ({"agent": "coder"}, rule_ask()),
        ({}, rule_ask(requester=BOB)),
        ({}, rule_ask("shell", command="ls")),
    ],
    ids=["other-thread", "other-agent", "other-person", "other-tool"],
)
async def test_grant_covers_only_its_thread_agent_person_and_tool(desks, ask_seat, request_):
    desk, client = desks.open(), RecordingClient()
    await granted(desk, client)

    waiting, _card = await card_of(desk, client, seat(client, "turn-2", **ask_seat), request_)

    assert len(client.sent) == 2
    await stop(waiting)


async def test_grant_only_the_requester_may_give_it_and_only_for_an_offered_duration(desks):
    desk, client = desks.open(), RecordingClient()
    waiting, card = await card_of(desk, client, seat(client, "turn-1"), rule_ask())

    assert await desk.decide(client, card, "approved", BOB, auto_approve_s=600) is False
    assert await desk.decide(client, card, "approved", ALICE, auto_approve_s=120) is False
    assert await desk.decide(client, card, "approved", ALICE, auto_approve_s=True) is False  # type: ignore[arg-type]
    assert desk.pending_card(card.card_event_id) is not None
    await stop(waiting)


async def test_grant_ends_when_the_config_changes(desks):
    desk, client = desks.open(), RecordingClient()
    await granted(desk, client)

    desks.config = Config.model_validate({"agents": {"helper": {"display_name": "Helper", "role": "new"}}})

    waiting, _card = await card_of(desk, client, seat(client, "turn-2"), rule_ask())
    assert len(client.sent) == 2
    await stop(waiting)


async def test_grant_approves_the_persons_other_cards_waiting_for_the_tool_there(desks):
    desk, client = desks.open(), RecordingClient()
    first, card = await card_of(desk, client, seat(client, "turn-1"), rule_ask())
    second, _ = await card_of(desk, client, seat(client, "turn-2"), rule_ask(thought="second"))
    other, _ = await card_of(desk, client, seat(client, "turn-3"), rule_ask("shell", command="ls"))

    await desk.decide(client, card, "approved", ALICE, auto_approve_s=300)

    assert await first is True and await second is True
    assert desk.pending_card("$card2") is None and desk.pending_card("$card3") is not None
    await stop(other)


async def test_grant_stopped_from_its_card_by_its_person_only(desks):
    desk, client = desks.open(), RecordingClient()
    await granted(desk, client)
    card = desk.card("$card1")

    assert await desk.stop_grant(client, card, BOB) is False
    assert await desk.stop_grant(client, card, ALICE) is True
    assert await desk.stop_grant(client, card, ALICE) is False

    edit = client.edits[-1]
    assert edit["event_id"] == "$card1" and "Auto-approval of think stopped at" in edit["body"]
    assert edit["extra_content"][APPROVAL_CONTENT_KEY]["auto_approval"]["revoked_at"] is not None
    waiting, _card = await card_of(desk, client, seat(client, "turn-2"), rule_ask())
    assert len(client.sent) == 2
    await stop(waiting)


async def test_grant_and_window_outlive_a_restart(desks):
    desk, client = desks.open(), RecordingClient()
    await granted(desk, client)
    desk.timed.open_window(ROOM, "$elsewhere", ALICE, 600)  # type: ignore[union-attr]

    restarted = desks.open()

    assert await restarted.request(seat(client, "turn-2"), rule_ask(thought="after the restart")) is True
    assert await restarted.request(seat(client, "turn-3", thread="$elsewhere"), rule_ask("shell")) is True
    assert len(client.sent) == 1


async def test_window_lets_every_call_that_would_ask_the_person_through(desks):
    desk, client = desks.open(), RecordingClient()
    timed = desk.timed
    assert timed is not None
    timed.open_window(ROOM, "$root", ALICE, 1800)

    assert await desk.request(seat(client, "t1"), rule_ask("shell", command="rm -rf build")) is True
    assert await desk.request(seat(client, "t2", agent="coder"), rule_ask(plugin="guard")) is True  # a plugin's card
    assert client.sent == []
    bob, _card = await card_of(desk, client, seat(client, "t3"), rule_ask(requester=BOB))  # not his window
    elsewhere, _card = await card_of(desk, client, seat(client, "t4", thread="$other"), rule_ask())
    assert len(client.sent) == 2

    assert timed.close_window(ROOM, "$root", ALICE) is True
    after, _card = await card_of(desk, client, seat(client, "t5"), rule_ask())
    assert len(client.sent) == 3
    for waiting in (bob, elsewhere, after):
        await stop(waiting)


async def test_window_for_the_room_covers_its_threads_and_ends_on_time(desks):
    desk, client = desks.open(), RecordingClient()
    desk.timed.open_window(ROOM, None, ALICE, 60)  # type: ignore[union-attr]

    assert await desk.request(seat(client, "t1", thread="$any"), rule_ask()) is True

    desks.now += 61
    waiting, _card = await card_of(desk, client, seat(client, "t2", thread="$any"), rule_ask())
    await stop(waiting)


async def test_window_opened_approves_the_persons_waiting_cards_in_that_conversation(desks):
    desk, client = desks.open(), RecordingClient()
    mine, _ = await card_of(desk, client, seat(client, "t1"), rule_ask())
    bobs, _ = await card_of(desk, client, seat(client, "t2"), rule_ask(requester=BOB))
    elsewhere, _ = await card_of(desk, client, seat(client, "t3", thread="$other"), rule_ask())
    desk.timed.open_window(ROOM, "$root", ALICE, 600)  # type: ignore[union-attr]

    assert await desk.approve_waiting(ROOM, "$root", ALICE) == 1

    assert await mine is True
    assert not bobs.done() and not elsewhere.done()
    await stop(bobs)
    await stop(elsewhere)
