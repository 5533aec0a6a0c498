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


def _on_disk(path, entity):
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT event_id FROM handled_events WHERE entity = ?", (entity,))}


def test_state_observed_claims_are_remembered_at_once_and_written_in_batches(tmp_path, monkeypatch):
    from mindroom.state.sqlite import journal as module

    path = tmp_path / "state.db"
    state = SqliteTurnJournal(path)
    monkeypatch.setattr(module, "_OBSERVED_BATCH", 3)
    assert state.claim("scout", "$a") is True
    assert state.claim("scout", "$a") is False
    assert state.claim("scout", "$a", {"event_id": "$a"}) is False  # observed: not taken as a turn after all
    assert state.seen("scout", "$a") and state.pending("scout") == []
    assert _on_disk(path, "scout") == set()  # not written yet: one write per batch
    state.claim("scout", "$b")
    state.claim("scribe", "$a")
    assert _on_disk(path, "scout") == {"$a", "$b"}
    state.claim("scout", "$c")
    state.close()  # what waits is written on close
    assert _on_disk(path, "scout") == {"$a", "$b", "$c"}
    reopened = SqliteTurnJournal(path)
    assert reopened.claim("scout", "$c") is False


def test_state_observed_claims_wait_no_longer_than_the_flush_interval(tmp_path, monkeypatch):
    from mindroom.state.sqlite import journal as module

    path = tmp_path / "state.db"
    state = SqliteTurnJournal(path)
    clock = [1000.0]
    monkeypatch.setattr(module.time, "time", lambda: clock[0])
    state.claim("scout", "$a")
    clock[0] += module._OBSERVED_FLUSH_S
    state.claim("scout", "$b")
    assert _on_disk(path, "scout") == {"$a", "$b"}
    state.close()


def test_state_an_entity_claiming_a_turn_it_observed_before_a_restart_is_refused(tmp_path):
    path = tmp_path / "state.db"
    state = SqliteTurnJournal(path)
    state.claim("scout", "$a")
    state.close()
    reopened = SqliteTurnJournal(path)
    assert reopened.claim("scout", "$a", {"event_id": "$a"}) is False
    assert reopened.claim("scout", "$a") is False


def test_state_observed_claims_a_failed_batch_did_not_write_are_kept_for_the_next(tmp_path, monkeypatch):
    from structlog.testing import capture_logs

    from mindroom.state.sqlite import journal as module

    path = tmp_path / "state.db"
    state = SqliteTurnJournal(path)
    monkeypatch.setattr(module, "_OBSERVED_BATCH", 2)
    with sqlite3.connect(path) as db:  # the write fails as a full disk would
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON handled_events WHEN NEW.event_id = '$b'"
            " BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    state.claim("scout", "$a")
    with capture_logs() as logs:
        assert state.claim("scout", "$b") is True  # the batch fails; the claim is remembered all the same
    assert [entry["event"] for entry in logs] == ["observed claims not written yet"]
    assert state.claim("scout", "$b") is False
    assert _on_disk(path, "scout") == set()  # nothing half written
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER refuse")
    state.claim("scout", "$c")  # the next batch (the transaction was rolled back) writes all three
    assert _on_disk(path, "scout") == {"$a", "$b", "$c"}
    state.close()
