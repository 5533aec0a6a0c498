"""TurnJournal: dedup, unfinished turns and unfinished streamed answers survive a reopen."""

import sqlite3

from mindroom.state.sqlite.journal import SqliteTurnJournal


def test_state_claim_is_once_per_entity_across_reopen(tmp_path):
    path = tmp_path / "state.db"
    state = SqliteTurnJournal(path)
    assert state.claim("agent", "$e1") is True
    assert state.claim("agent", "$e1") is False
    assert state.claim("router", "$e1") is True
    state.close()
    reopened = SqliteTurnJournal(path)
    assert reopened.claim("agent", "$e1") is False
    assert reopened.seen("agent", "$e1")
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_state_pending_turns_until_completed(tmp_path):
    state = SqliteTurnJournal(tmp_path / "state.db")
    state.claim("agent", "$done", {"event_id": "$done"})
    state.claim("agent", "$cut", {"event_id": "$cut", "content": {"body": "hi"}})
    state.complete("agent", "$done")
    pending = SqliteTurnJournal(tmp_path / "state.db").pending("agent")
    assert [(p.event_id, p.event["content"]["body"]) for p in pending] == [("$cut", "hi")]
    assert state.pending("router") == []


def test_state_open_answers_recorded_before_send_and_closed_after(tmp_path):
    state = SqliteTurnJournal(tmp_path / "state.db")
    state.begin_answer("agent", "!room", "txn1", "$source", "$root")
    state.begin_answer("agent", "!room", "txn2", "$other", None)
    state.answer_sent("txn1", "$reply")
    answers = {a.txn_id: a for a in state.open_answers("agent")}
    assert answers["txn1"].response_event_id == "$reply"
    assert answers["txn2"].response_event_id is None
    state.end_answer("$reply")
    state.drop_answer("txn2")
    assert state.open_answers("agent") == []


def test_state_migrates_a_file_from_the_earlier_layout(tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE handled_events (entity TEXT, event_id TEXT, handled_at REAL, PRIMARY KEY (entity, event_id));"
        "INSERT INTO handled_events VALUES ('agent', '$old', 1e12);"
        "CREATE TABLE open_answers (response_event_id TEXT PRIMARY KEY, entity TEXT, room_id TEXT,"
        " source_event_id TEXT, thread_root TEXT, started_at REAL);"
    )
    db.commit()
    db.close()
    state = SqliteTurnJournal(path)
    assert state.claim("agent", "$old") is False
    state.begin_answer("agent", "!room", "txn", "$source", None)
    assert [a.txn_id for a in state.open_answers("agent")] == ["txn"]
