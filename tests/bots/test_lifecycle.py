"""The journal records of a turn, owned by context managers: a claimed turn, and a streamed answer's record."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.bots.lifecycle import claimed, claimed_turn, open_answer
from mindroom.matrix import MatrixEvent
from mindroom.state.errors import StateFencedError
from mindroom.state.journal import TurnJournal
from mindroom.state.sqlite.journal import SqliteTurnJournal

ROOM = "!lobby:localhost"
EVENT = MatrixEvent(ROOM, "$question", "@alice:localhost", "m.room.message", {"body": "hi"}, 1)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[TurnJournal]:
    journal = SqliteTurnJournal(tmp_path / "daemon.db")
    yield journal
    journal.close()


def pending_ids(journal: TurnJournal) -> list[str]:
    return [pending.event_id for pending in journal.pending("helper")]


# -- claimed_turn -----------------------------------------------------------------------------------------


def test_claimed_turn_is_pending_with_its_event_while_it_runs_and_completed_after(journal):
    with claimed_turn(journal, "helper", EVENT) as claimed:
        assert claimed is True
        [pending] = journal.pending("helper")
        assert (pending.event_id, pending.event["content"]) == ("$question", {"body": "hi"})

    assert journal.pending("helper") == [] and journal.seen("helper", "$question")


def test_claimed_turn_of_an_event_already_handled_is_not_claimed_again(journal):
    with claimed_turn(journal, "helper", EVENT):
        pass

    with claimed_turn(journal, "helper", EVENT) as claimed:
        assert claimed is False
    with claimed_turn(journal, "coder", EVENT) as other:  # each entity claims for itself
        assert other is True


def test_claimed_turn_that_fails_is_completed(journal):
    with pytest.raises(RuntimeError), claimed_turn(journal, "helper", EVENT):
        raise RuntimeError("the pipeline failed")

    assert pending_ids(journal) == [] and journal.seen("helper", "$question")


def test_claimed_turn_whose_answer_was_fenced_stays_pending_for_the_daemon_holding_the_state(journal):
    with claimed_turn(journal, "helper", EVENT):
        raise StateFencedError("not sending the reply")

    assert pending_ids(journal) == ["$question"]


@pytest.mark.asyncio
async def test_claimed_turn_cancelled_by_shutdown_stays_pending_for_the_next_start(journal):
    async def turn() -> None:
        with claimed_turn(journal, "helper", EVENT):
            await asyncio.sleep(30)

    task = asyncio.ensure_future(turn())
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    assert pending_ids(journal) == ["$question"]


def test_claimed_turn_replayed_after_a_restart_is_completed_without_a_new_claim(journal):
    journal.claim("helper", "$question", {"before": "restart"})

    with claimed_turn(journal, "helper", EVENT, replay=True) as claimed:
        assert claimed is True
        assert pending_ids(journal) == ["$question"]

    assert pending_ids(journal) == []


@pytest.mark.parametrize("ending", ["returns", "raises", "is cancelled"])
@pytest.mark.asyncio
async def test_claimed_without_content_records_the_turn_and_leaves_nothing_pending(journal, ending):
    async def turn() -> None:
        with claimed(journal, "helper", "api:chatcmpl-1") as ours:
            assert ours is True
            assert journal.seen("helper", "api:chatcmpl-1") and pending_ids(journal) == []
            if ending == "raises":
                raise RuntimeError("the model failed")
            if ending == "is cancelled":
                await asyncio.sleep(30)

    task = asyncio.ensure_future(turn())
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    assert journal.seen("helper", "api:chatcmpl-1") and pending_ids(journal) == []
    with claimed(journal, "helper", "api:chatcmpl-1") as again:  # taken once, whichever way it ended
        assert again is False
    with claimed(journal, "helper", "api:chatcmpl-10") as near:  # an id with a suffix is another question
        assert near is True


# -- open_answer ----------------------------------------------------------------------------------------------


def open_ids(journal: TurnJournal) -> list[tuple[str, str | None]]:
    return [(answer.txn_id, answer.response_event_id) for answer in journal.open_answers("helper")]


def test_open_answer_is_recorded_before_its_send_and_ended_on_the_way_out(journal):
    with open_answer(journal, "helper", ROOM, "$question", "$question") as answer:
        answer.begin("txn-1")
        assert open_ids(journal) == [("txn-1", None)]  # a crash mid-send still leaves it to be marked
        answer.sent("$answer")
        assert open_ids(journal) == [("txn-1", "$answer")] and answer.event_id == "$answer"

    assert open_ids(journal) == []


def test_open_answer_left_early_is_still_ended(journal):
    def answer_then_return_early() -> None:
        with open_answer(journal, "helper", ROOM, "$question", None) as answer:
            answer.begin("txn-1")
            answer.sent("$answer")
            return  # say, a hook suppressed the answer

    answer_then_return_early()

    assert open_ids(journal) == []


def test_open_answer_cut_short_by_an_exception_is_left_for_the_next_start(journal):
    def send_then_lose_the_homeserver() -> None:
        with open_answer(journal, "helper", ROOM, "$question", None) as answer:
            answer.begin("txn-1")
            answer.sent("$answer")
            raise ConnectionError("the homeserver went away")

    with pytest.raises(ConnectionError):
        send_then_lose_the_homeserver()

    assert open_ids(journal) == [("txn-1", "$answer")]


def test_open_answer_ends_once_and_records_nothing_for_an_answer_that_never_streamed(journal):
    with open_answer(journal, "helper", ROOM, "$question", None) as answer:
        answer.shown_in("$earlier-answer")  # an edited question's answer is edited in place: nothing to record
        assert open_ids(journal) == [] and answer.event_id == "$earlier-answer"
        answer.begin("txn-1")
        answer.end()
        answer.end()
        assert not answer.is_open

    assert open_ids(journal) == []
