"""Every store round-trips on both backends: what one daemon wrote, the next one (after the lock) reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mindroom.config.overrides import Override
from mindroom.state.answers import AnswerRecord
from mindroom.state.approvals import ApprovalRecord
from mindroom.state.backend import StateBackend
from mindroom.state.location import open_state_backend
from mindroom.state.schedules import ScheduledTask

pytestmark = pytest.mark.asyncio

Opener = Callable[[], StateBackend]


async def _locked(opener: Opener, opened: list[StateBackend]) -> StateBackend:
    backend = opener()
    opened.append(backend)
    await backend.acquire()
    return backend


async def _reopen(opener: Opener, opened: list[StateBackend], backend: StateBackend) -> StateBackend:
    await backend.close()
    return await _locked(opener, opened)


async def test_backends_journal_round_trips(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    journal = (await first.open_stores()).journal
    assert journal.claim("agent", "$done", {"event_id": "$done"}) is True
    assert journal.claim("agent", "$done") is False
    journal.claim("agent", "$cut", {"event_id": "$cut", "content": {"body": "hi"}})
    journal.claim("router", "$plain")
    journal.complete("agent", "$done")
    journal.begin_answer("agent", "!room", "txn1", "$cut", "$root")
    journal.answer_sent("txn1", "$reply")
    journal.begin_answer("agent", "!room", "txn2", "$other", None)
    journal.begin_answer("agent", "!room", "txn3", "$third", None)
    journal.drop_answer("txn3")

    journal = (await (await _reopen(opener, opened, first)).open_stores()).journal

    assert journal.claim("agent", "$done") is False
    assert journal.claim("router", "$plain") is False
    assert journal.seen("agent", "$cut")
    assert journal.claim("router", "$done") is True
    assert [(p.event_id, p.event["content"]["body"]) for p in journal.pending("agent")] == [("$cut", "hi")]
    answers = {a.txn_id: a for a in journal.open_answers("agent")}
    assert set(answers) == {"txn1", "txn2"}
    assert answers["txn1"].response_event_id == "$reply"
    assert answers["txn1"].thread_root == "$root"
    assert answers["txn2"].response_event_id is None
    journal.end_answer("$reply")
    assert [a.txn_id for a in journal.open_answers("agent")] == ["txn2"]


async def test_backends_rooms_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    rooms = (await first.open_stores()).rooms
    rooms.remember("router", "!a:hs", "created", "lobby")
    rooms.remember("helper", "!b:hs", "invited")
    rooms.remember("helper", "!c:hs", "invited")
    rooms.forget("helper", "!c:hs")
    rooms.remember("router", "!a:hs", "verified", "lobby")

    rooms = (await (await _reopen(opener, opened, first)).open_stores()).rooms

    assert [(r.entity, r.room_id, r.origin, r.room_key) for r in rooms.rooms()] == [
        ("helper", "!b:hs", "invited", None),
        ("router", "!a:hs", "verified", "lobby"),
    ]
    assert rooms.known("!b:hs") and not rooms.known("!c:hs")
    assert [r.room_id for r in rooms.rooms("router")] == ["!a:hs"]


async def test_backends_overrides_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    overrides = (await first.open_stores()).overrides
    assert overrides is not None
    overrides.put(Override("config", "defaults.num_history_runs", 3, "@admin:hs", 1.0))
    overrides.put(Override("room", "model", "fast", "@admin:hs", 2.0, room_id="!r:hs"))
    overrides.put(Override("thread", "instructions:helper", ["Be brief."], "@admin:hs", 3.0, "!r:hs", "$root"))
    overrides.put(Override("room", "model", "slow", "@other:hs", 4.0, room_id="!r:hs"))  # same slot: replaces
    overrides.put(Override("room", "thread_mode", "room", "@admin:hs", 5.0, room_id="!gone:hs"))
    assert overrides.remove(("room", "!gone:hs", "", "thread_mode")) is True
    assert overrides.remove(("room", "!gone:hs", "", "thread_mode")) is False

    overrides = (await (await _reopen(opener, opened, first)).open_stores()).overrides
    assert overrides is not None

    assert overrides.all() == [
        Override("config", "defaults.num_history_runs", 3, "@admin:hs", 1.0),
        Override("thread", "instructions:helper", ["Be brief."], "@admin:hs", 3.0, "!r:hs", "$root"),
        Override("room", "model", "slow", "@other:hs", 4.0, room_id="!r:hs"),
    ]


def _task(task_id: str, next_run: float | None, room: str = "!r:hs") -> ScheduledTask:
    return ScheduledTask(
        task_id, room, None, "helper", "@u:hs", "router", "every", "1h", "ping", "hourly", 1.0, next_run
    )


async def test_backends_schedules_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    schedules = (await first.open_stores()).schedules
    schedules.add(_task("late", 300.0))
    schedules.add(_task("soon", 100.0))
    schedules.add(_task("elsewhere", 200.0, room="!other:hs"))
    schedules.add(_task("ran", 50.0))
    schedules.set_next_run("soon", 150.0)
    schedules.set_next_run("ran", None)
    assert schedules.remove("elsewhere") is True
    assert schedules.remove("elsewhere") is False

    schedules = (await (await _reopen(opener, opened, first)).open_stores()).schedules

    assert [(t.task_id, t.next_run) for t in schedules.pending()] == [("soon", 150.0), ("late", 300.0)]
    assert [t.task_id for t in schedules.in_room("!r:hs")] == ["soon", "late"]
    assert schedules.get("late") == _task("late", 300.0)
    assert schedules.get("ran") is None


async def test_backends_answers_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    answers = (await first.open_stores()).answers
    answers.record(AnswerRecord("agent", "$q1", "!r:hs", "$root", "$root", "@u:hs", "$a1"))
    answers.record(AnswerRecord("agent", "$q2", "!r:hs", "$root", "$root", "@u:hs", "$a2"))
    answers.record(AnswerRecord("other", "$q1", "!r:hs", "$root", "$root", "@u:hs", "$b1"))
    answers.record(AnswerRecord("agent", "$q1", "!r:hs", "$root", "$root", "@u:hs", "$a1-edited"))

    answers = (await (await _reopen(opener, opened, first)).open_stores()).answers

    assert answers.for_question("agent", "$q1") == AnswerRecord(
        "agent", "$q1", "!r:hs", "$root", "$root", "@u:hs", "$a1-edited"
    )
    assert answers.for_question("agent", "$nope") is None
    assert answers.latest("agent", "$root").response_event_id == "$a1-edited"  # type: ignore[union-attr]
    assert answers.latest("other", "$root").response_event_id == "$b1"  # type: ignore[union-attr]
    assert answers.latest("agent", "$elsewhere") is None


def _approval(approval_id: str, expires_at: float) -> ApprovalRecord:
    return ApprovalRecord(
        approval_id, "agent", "!r:hs", "$root", "shell", "it deletes files", "🔐 agent wants to run shell",
        None, "pending", None, None, 1.0, expires_at, None,
    )  # fmt: skip


async def test_backends_approvals_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    approvals = (await first.open_stores()).approvals
    approvals.open(_approval("asked", 9e9))
    approvals.set_card("asked", "$card")
    approvals.open(_approval("overdue", 5.0))
    approvals.open(_approval("decided", 9e9))
    assert approvals.resolve("decided", "denied", by="@u:hs", reason="not now") is True
    assert approvals.resolve("decided", "approved") is False
    replayed = approvals.open(_approval("asked", 1.0))

    approvals = (await (await _reopen(opener, opened, first)).open_stores()).approvals

    assert replayed.card_event_id == "$card" and replayed.expires_at == 9e9
    asked = approvals.by_card("$card")
    assert asked is not None and asked.approval_id == "asked" and asked.pending
    decided = approvals.get("decided")
    assert decided is not None and (decided.status, decided.decided_by, decided.reason) == (
        "denied",
        "@u:hs",
        "not now",
    )
    assert [r.approval_id for r in approvals.overdue(now=10.0)] == ["overdue"]
    assert approvals.resolve("overdue", "expired") is True
    assert approvals.overdue(now=10.0) == []
    assert approvals.get("never") is None


async def test_backends_snapshots_round_trip(opener: Opener, opened: list[StateBackend]):
    first = await _locked(opener, opened)
    (await first.open_stores()).snapshots.write("hooks", '{"first": 1}')
    (await first.open_stores()).snapshots.write("hooks", '{"second": 2}')

    snapshots = (await (await _reopen(opener, opened, first)).open_stores()).snapshots

    assert snapshots.read("hooks") == '{"second": 2}'
    assert snapshots.read("other") is None
    with pytest.raises(ValueError, match="snapshot name"):
        snapshots.write("../escape", "x")


async def test_backends_second_daemon_is_refused_with_the_holder_named(opener: Opener, opened: list[StateBackend]):
    import os
    import socket

    from mindroom.state.errors import StateLockedError

    await _locked(opener, opened)
    second = opener()
    opened.append(second)

    with pytest.raises(StateLockedError) as refused:
        await second.acquire()

    holder = refused.value.holder
    assert holder is not None
    assert (holder.host, holder.pid) == (socket.gethostname(), os.getpid())
    assert f"host {socket.gethostname()}, pid {os.getpid()}, since " in str(refused.value)
    assert "is held by another daemon" in str(refused.value)
    assert not second.locked
    assert (await second.read_holder()) == holder


async def test_backends_standby_takes_the_lock_when_the_holder_closes(opener: Opener, opened: list[StateBackend]):
    import asyncio

    first = await _locked(opener, opened)
    (await first.open_stores()).journal.claim("agent", "$before")
    standby = opener()
    opened.append(standby)
    waiting = asyncio.create_task(standby.acquire(wait=True, poll_s=0.05))
    await asyncio.sleep(0.3)
    assert not waiting.done()

    await first.close()
    await asyncio.wait_for(waiting, 10)

    assert standby.locked
    assert (await standby.open_stores()).journal.claim("agent", "$before") is False


async def test_backends_an_unreachable_database_is_named_without_its_password(tmp_path: Path):
    from structlog.testing import capture_logs

    from mindroom.state.errors import StateError

    backend = open_state_backend(tmp_path, "postgresql://mindroom:hunter2-very-secret@127.0.0.1:9/mindroom")
    with capture_logs() as logs, pytest.raises(StateError) as failed:
        await backend.acquire()

    assert backend.location == "postgresql://mindroom@127.0.0.1:9/mindroom"
    assert "hunter2-very-secret" not in str(failed.value) + repr(logs)
    await backend.close()


async def test_backends_safe_url_drops_the_password_wherever_the_url_holds_it():
    from mindroom.state.location import safe_url

    assert safe_url("postgresql://u:pw@db:5432/x") == "postgresql://u@db:5432/x"
    assert safe_url("postgresql://u@db/x?sslmode=require&password=pw") == "postgresql://u@db/x?sslmode=require"
    assert safe_url("postgresql://[::1]:5/x") == "postgresql://[::1]:5/x"
    assert safe_url("postgresql://u:pw@[::1]:5/x") == "postgresql://u@[::1]:5/x"


async def test_sqlite_lock_held_asks_without_taking_or_disturbing_the_lock(tmp_path: Path):
    from mindroom.state.sqlite.backend import SqliteState, lock_held

    data = tmp_path / "data"
    lock = data / "state" / "daemon.lock"
    assert lock_held(lock) is False
    assert not data.exists()  # asking created nothing

    holder = SqliteState(data)
    await holder.acquire()
    try:
        written = lock.read_bytes()
        assert lock_held(lock) is True
        assert lock_held(lock) is True
        second = SqliteState(data)
        assert await second.try_lock() is not None and not second.locked  # still the holder's
        assert lock.read_bytes() == written
    finally:
        await holder.close()

    assert lock_held(lock) is False
    after = SqliteState(data)
    await after.acquire()  # the question left nothing behind that blocks a daemon
    await after.close()
