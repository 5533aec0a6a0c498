"""Approvals: the desk asks on a card, waits, and records the outcome; ingress lets answers to cards through."""

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.approvals.desk import (
    APPROVAL_CONTENT_KEY,
    ApprovalDesk,
    ApprovalSeat,
    approval_id,
    card_text,
    outcome_text,
    question_text,
)
from mindroom.bots.ingress import CLOCK_SKEW_MS, InboundReaction, IngressDrop
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.daemon.wiring import RunningDaemon
from mindroom.hooks import ApprovalRequest
from mindroom.hooks.registry import HookRegistry
from mindroom.matrix import MatrixEvent
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.approval_rules import APPROVAL_RULES_PLUGIN
from tests.bots.bench import BOB, LOBBY, Bench
from tests.bots.support import close_stores, ingress_of, unit_daemon

ALICE = "@alice:localhost"
STRANGER = "@mallory:localhost"
HELPER = "@mindroom_helper:localhost"
ROOM = "!lobby:localhost"
START_MS = int(time.time() * 1000)


class RecordingClient:
    """Stands in for the agent's Matrix account at the desk's seam: what it posted and edited."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self._by_txn: dict[str, str] = {}

    async def send_message(self, room_id: str, body: str, **options: Any) -> str:
        txn_id = options.get("txn_id")
        if txn_id in self._by_txn:  # as a homeserver does: one transaction id, one event
            return self._by_txn[txn_id]
        event_id = f"$card{len(self.sent) + 1}"
        self.sent.append({"room_id": room_id, "body": body, **options})
        self._by_txn[txn_id] = event_id
        return event_id

    async def edit_message(self, room_id: str, event_id: str, body: str, **options: Any) -> str:
        self.edits.append({"room_id": room_id, "event_id": event_id, "body": body, **options})
        return f"$edit{len(self.edits)}"


def seat(client: RecordingClient, correlation_id: str = "turn-1") -> ApprovalSeat:
    return ApprovalSeat("helper", "Helper", client, ROOM, "$root", "$question", correlation_id)  # type: ignore[arg-type]


def ask(prompt: str = "it deletes files", timeout_s: float = 5.0, **arguments: Any) -> ApprovalRequest:
    return ApprovalRequest(
        prompt=prompt,
        timeout_s=timeout_s,
        tool_name="run_shell_command",
        arguments=arguments or {"command": "rm -rf build"},
        agent_name="helper",
        room_id=ROOM,
        thread_id="$root",
        requester_id=ALICE,
        correlation_id="turn-1",
        plugin_name="guard",
        hook_name="ask_first",
    )


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[ApprovalDesk]:
    store = SqliteApprovalStore(tmp_path / "approvals.db")
    yield ApprovalDesk(store)
    store.close()


async def until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def test_approval_id_is_stable_and_names_the_call():
    base = approval_id("turn-1", "guard", "ask_first", "shell", {"command": "ls", "cwd": "/"})

    assert base == approval_id("turn-1", "guard", "ask_first", "shell", {"cwd": "/", "command": "ls"})
    assert base != approval_id("turn-2", "guard", "ask_first", "shell", {"command": "ls", "cwd": "/"})
    assert base != approval_id("turn-1", "guard", "ask_first", "shell", {"command": "ls -la", "cwd": "/"})
    assert base != approval_id("turn-1", "other", "ask_first", "shell", {"command": "ls", "cwd": "/"})


def test_card_texts_say_what_is_asked_and_how_it_ended():
    question = question_text("Helper", "run_shell_command", "it deletes files")

    assert card_text(question, 300) == (
        "🔐 Helper wants to run run_shell_command: it deletes files — react ✅ to allow or ❌ to deny"
        " (expires in 5 min)."
    )
    assert card_text(question, 20).endswith("(expires in 20 s).")


@pytest.mark.asyncio
async def test_desk_posts_a_card_and_a_reaction_approves(desk):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), ask()))
    await until(lambda: client.sent)
    card = desk.pending_card("$card1")

    assert await desk.decide(client, card, "approved", ALICE) is True

    assert await waiting is True
    (sent,) = client.sent
    assert sent["body"].startswith("🔐 Helper wants to run run_shell_command: it deletes files — react ✅")
    assert (sent["room_id"], sent["thread_root"]) == (ROOM, "$root")
    assert sent["extra_content"][APPROVAL_CONTENT_KEY]["status"] == "pending"
    (edit,) = client.edits
    assert edit["event_id"] == "$card1"
    assert edit["body"].endswith(f"— ✅ approved by {ALICE}.")
    assert edit["extra_content"][APPROVAL_CONTENT_KEY]["status"] == "approved"


@pytest.mark.asyncio
async def test_desk_denial_with_a_reason_is_shown_on_the_card(desk):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), ask()))
    await until(lambda: client.sent)

    await desk.decide(client, desk.pending_card("$card1"), "denied", ALICE, reason="  not on Fridays  ")

    assert await waiting is False
    assert client.edits[0]["body"].endswith(f'— ❌ denied by {ALICE}: "not on Fridays".')


@pytest.mark.asyncio
async def test_desk_nobody_answers_the_clock_denies(desk):
    client = RecordingClient()

    approved = await desk.request(seat(client), ask(timeout_s=0.3))

    assert approved is False
    assert desk.card("$card1").status == "expired"
    assert client.edits[0]["body"].endswith("— ⌛ expired without an answer.")


@pytest.mark.asyncio
async def test_desk_replayed_turn_waits_on_its_earlier_card(desk):
    client = RecordingClient()
    first = asyncio.ensure_future(desk.request(seat(client), ask()))
    await until(lambda: client.sent)
    first.cancel()  # the daemon stopped mid-wait: the approval stays pending
    await asyncio.gather(first, return_exceptions=True)

    replay = asyncio.ensure_future(desk.request(seat(client), ask(prompt="asked again")))
    await asyncio.sleep(0.1)
    await desk.decide(client, desk.pending_card("$card1"), "approved", ALICE)

    assert await replay is True
    assert len(client.sent) == 1


@pytest.mark.asyncio
async def test_desk_a_decided_question_is_answered_from_the_store(desk):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), ask()))
    await until(lambda: client.sent)
    await desk.decide(client, desk.pending_card("$card1"), "denied", ALICE)
    await waiting

    assert await desk.request(seat(client), ask()) is False
    assert await desk.request(seat(client, "turn-2"), ask(timeout_s=0.1)) is False  # another turn asks anew
    assert len(client.sent) == 2


@pytest.mark.asyncio
async def test_desk_an_answer_given_after_expiry_expires_the_card(desk):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), ask(timeout_s=30)))
    await until(lambda: client.sent)
    card = desk.pending_card("$card1")

    await desk.decide(client, card, "approved", ALICE, at_ms=int((card.expires_at + 5) * 1000))

    assert await waiting is False
    assert desk.card("$card1").status == "expired"


@pytest.mark.asyncio
async def test_desk_expire_overdue_marks_cards_whose_time_ran_out(desk, tmp_path):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), ask(timeout_s=0.2)))
    await until(lambda: client.sent)
    waiting.cancel()  # the daemon went down before the clock ran out
    await asyncio.gather(waiting, return_exceptions=True)
    await asyncio.sleep(0.3)
    restarted = ApprovalDesk(SqliteApprovalStore(tmp_path / "approvals.db"))

    assert await restarted.expire_overdue({"helper": client}) == 1  # type: ignore[dict-item]

    assert restarted.card("$card1").status == "expired"
    assert outcome_text(restarted.card("$card1")) == client.edits[-1]["body"]
    assert await restarted.expire_overdue({"helper": client}) == 0  # type: ignore[dict-item]
    restarted.store.close()


# -- ingress: answers to cards ------------------------------------------------------------------------------


@dataclass(eq=False)
class StandInEntity:
    """What ingress reads of a bot, and the tasks it spawns."""

    name: str
    client: RecordingClient
    is_router: bool = False
    spawned: list[Any] = field(default_factory=list)

    def spawn(self, work, what: str) -> None:
        self.spawned.append(asyncio.ensure_future(work))


@pytest.fixture
def daemon(tmp_path: Path, desk: ApprovalDesk) -> Iterator[RunningDaemon]:
    config = Config.model_validate(
        {
            "agents": {"helper": {"display_name": "Helper", "rooms": ["lobby"]}},
            "rooms": {"lobby": {}},
            "authorization": {"global_users": [ALICE]},
        }
    )
    daemon = unit_daemon(
        tmp_path,
        LiveState(config=config, registry=HookRegistry.from_plugins([])),
        bots={"router": "@mindroom_router:localhost", "helper": HELPER},
        rooms={"lobby": ROOM},
        started_at_ms=START_MS,
        approvals=desk,
    )
    yield daemon
    close_stores(daemon)


async def pending_card(desk: ApprovalDesk, client: RecordingClient) -> tuple[asyncio.Future, str]:
    waiting = asyncio.ensure_future(desk.request(seat(client), ask(timeout_s=30)))
    await until(lambda: client.sent)
    return waiting, "$card1"


def reaction(target: str, *, sender: str = ALICE, at_ms: int = START_MS, key: str = "✅") -> MatrixEvent:
    content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": key}}
    return MatrixEvent(ROOM, f"$react-{target}-{at_ms}", sender, "m.reaction", content, at_ms)


def reply(target: str, *, sender: str = ALICE, at_ms: int = START_MS, falling_back: bool = False) -> MatrixEvent:
    relation = {
        "rel_type": "m.thread",
        "event_id": "$root",
        "is_falling_back": falling_back,
        "m.in_reply_to": {"event_id": target},
    }
    content = {"msgtype": "m.text", "body": "no, not now", "m.relates_to": relation}
    return MatrixEvent(ROOM, f"$reply-{at_ms}-{sender}", sender, "m.room.message", content, at_ms)


STALE_MS = START_MS - CLOCK_SKEW_MS - 60_000


@pytest.mark.asyncio
async def test_ingress_a_reaction_to_a_pending_card_counts_even_from_before_the_start(daemon, desk):
    client = RecordingClient()
    entity = StandInEntity("helper", client)
    waiting, card = await pending_card(desk, client)

    accepted = ingress_of(daemon).reaction(entity, daemon.live, reaction(card, at_ms=STALE_MS))
    unrelated = ingress_of(daemon).reaction(entity, daemon.live, reaction("$elsewhere", at_ms=STALE_MS))

    assert isinstance(accepted, InboundReaction)
    assert unrelated == IngressDrop("older than this run")
    waiting.cancel()


@pytest.mark.asyncio
async def test_ingress_a_reply_to_a_pending_card_denies_and_never_becomes_a_turn(daemon, desk):
    client = RecordingClient()
    helper = StandInEntity("helper", client)
    router = StandInEntity("router", RecordingClient(), is_router=True)
    waiting, card = await pending_card(desk, client)
    answer = reply(card, at_ms=STALE_MS)
    ingress = ingress_of(daemon)

    assert ingress.message(router, daemon.live, answer) == IngressDrop("a reply to an approval card")
    assert ingress.message(helper, daemon.live, answer) == IngressDrop("a reply to an approval card")
    assert ingress.message(helper, daemon.live, answer) == IngressDrop("a reply to an approval card")

    assert await waiting is False
    assert len(helper.spawned) == 1 and router.spawned == []
    assert desk.card(card).reason == "no, not now"


@pytest.mark.asyncio
async def test_ingress_a_thread_message_falling_back_to_the_card_is_no_reply(daemon, desk):
    client = RecordingClient()
    entity = StandInEntity("helper", client)
    waiting, card = await pending_card(desk, client)
    ingress = ingress_of(daemon)

    result = ingress.message(entity, daemon.live, reply(card, falling_back=True, at_ms=START_MS + 10))
    stranger = ingress.message(entity, daemon.live, reply(card, sender=STRANGER, at_ms=START_MS + 20))

    assert not isinstance(result, IngressDrop)
    assert stranger == IngressDrop("unauthorized sender")
    assert desk.card(card).pending
    waiting.cancel()


# -- who may answer a rules' card ----------------------------------------------------------------------------


def rule_request(requester: str = ALICE) -> ApprovalRequest:
    """The question a `tool_approval:` rule asks of the person whose turn called the tool."""
    return ApprovalRequest(
        prompt="the approval rule 'run_*' asks first",
        timeout_s=30,
        tool_name="run_shell_command",
        arguments={"command": "rm -rf build"},
        agent_name="helper",
        room_id=ROOM,
        thread_id="$root",
        requester_id=requester,
        correlation_id="turn-1",
        plugin_name=APPROVAL_RULES_PLUGIN,
        hook_name="run_*",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "other",
    [BOB, f"{ALICE}.evil.example", "@alice:localhos", "@Alice:localhost"],
    ids=["another-person", "server-suffix", "server-prefix", "other-case"],
)
async def test_desk_a_rules_card_is_answered_by_its_requester_only(desk, other):
    client = RecordingClient()
    waiting = asyncio.ensure_future(desk.request(seat(client), rule_request()))
    await until(lambda: client.sent)
    card = desk.pending_card("$card1")

    assert await desk.decide(client, card, "approved", other) is False
    assert await desk.decide(client, card, "denied", other, reason="no") is False

    assert desk.pending_card("$card1") is not None  # still waiting: the call has not run
    assert client.edits == [] and not waiting.done()
    assert await desk.decide(client, card, "approved", ALICE) is True
    assert await waiting is True
    assert client.edits[-1]["body"].endswith(f"— ✅ approved by {ALICE}.")


RULED = {"helper": {"display_name": "Helper", "rooms": ["lobby"], "tools": ["calculator"]}}
RULES = {"rules": [{"match": "calculate", "action": "require_approval"}]}


async def handled(bench: Bench, event: MatrixEvent) -> None:
    """Deliver `event` and wait until the work it started (and what that spawned) has ended; the turns running
    before it (one waiting on its card) go on."""
    before = {task for bot in bench.bots.values() for task in bot.tasks.running}
    await bench.deliver(event)
    async with asyncio.timeout(20):
        while started := [task for bot in bench.bots.values() for task in bot.tasks.running if task not in before]:
            await asyncio.wait(started)


@pytest.mark.asyncio
@pytest.mark.parametrize("administrators", [[], [BOB]], ids=["authorized-person", "administrator"])
async def test_pipeline_a_rules_card_answered_by_another_person_keeps_the_call_waiting(
    make_bench, model_server, administrators
):
    bench = await make_bench(RULED, tool_approval=RULES, administrators=administrators)
    helper = bench.client("helper")
    model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("It is 42."))
    question = bench.server.message(LOBBY, ALICE, "six times seven?")
    await bench.deliver(question)
    await until(lambda: any(APPROVAL_CONTENT_KEY in m.content for m in helper.messages))
    [card] = helper.messages
    answer = {"rel_type": "m.thread", "event_id": question.event_id, "is_falling_back": False,
              "m.in_reply_to": {"event_id": card.event_id}}  # fmt: skip

    await handled(bench, bench.server.reaction(LOBBY, BOB, card.event_id, "✅"))  # Bob may use the room
    await handled(bench, bench.server.message(LOBBY, BOB, "no", extra_content={"m.relates_to": answer}))

    assert bench.desk.pending_card(card.event_id) is not None
    assert [m.body for m in helper.messages] == [card.body] and helper.edits == []
    assert len(model_server.requests) == 1  # held: the tool has not run, the model was not asked again

    await bench.deliver(bench.server.reaction(LOBBY, ALICE, card.event_id, "✅"))
    await bench.settle()

    assert [m.body for m in helper.messages][1:] == ["It is 42."]
    assert helper.edits[0].body.endswith(f"— ✅ approved by {ALICE}.")
