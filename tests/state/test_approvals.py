"""ApprovalStore: one row per question, decided once, found by its card, kept across a reopen."""

import time

from mindroom.state.approvals import ApprovalRecord
from mindroom.state.sqlite.approvals import SqliteApprovalStore


def record(approval_id="a1", *, expires_in=60.0, **changes):
    now = time.time()
    values = {
        "approval_id": approval_id,
        "agent": "helper",
        "room_id": "!room:localhost",
        "thread_root": "$root",
        "tool_name": "run_shell_command",
        "prompt": "it deletes files",
        "question": "🔐 Helper wants to run run_shell_command: it deletes files",
        "card_event_id": None,
        "status": "pending",
        "decided_by": None,
        "reason": None,
        "created_at": now,
        "expires_at": now + expires_in,
        "decided_at": None,
    }
    return ApprovalRecord(**{**values, **changes})


def test_approval_store_open_returns_the_existing_question_for_a_replayed_turn(tmp_path):
    store = SqliteApprovalStore(tmp_path / "approvals.db")
    first = store.open(record())
    store.set_card("a1", "$card")

    again = store.open(record(prompt="asked again", expires_in=999))

    assert first.pending and first.card_event_id is None
    assert (again.prompt, again.card_event_id, again.expires_at) == ("it deletes files", "$card", first.expires_at)


def test_approval_store_resolves_a_pending_approval_once(tmp_path):
    store = SqliteApprovalStore(tmp_path / "approvals.db")
    store.open(record())

    assert store.resolve("a1", "approved", by="@alice:localhost") is True
    assert store.resolve("a1", "expired") is False
    decided = store.get("a1")
    assert (decided.status, decided.decided_by, decided.pending) == ("approved", "@alice:localhost", False)
    assert decided.decided_at is not None


def test_approval_store_finds_approvals_by_card(tmp_path):
    store = SqliteApprovalStore(tmp_path / "approvals.db")
    store.open(record("a1"))
    store.open(record("a2"))
    store.set_card("a2", "$card2")

    assert store.by_card("$card2").approval_id == "a2"
    assert store.by_card("$other") is None


def test_approval_store_overdue_lists_only_pending_expired_ones(tmp_path):
    store = SqliteApprovalStore(tmp_path / "approvals.db")
    store.open(record("late", expires_in=-5))
    store.open(record("later", expires_in=-1))
    store.open(record("decided", expires_in=-5))
    store.resolve("decided", "denied", by="@bob:localhost", reason="no")
    store.open(record("fresh", expires_in=60))

    assert [r.approval_id for r in store.overdue()] == ["late", "later"]


def test_approval_store_is_private_and_survives_a_reopen(tmp_path):
    path = tmp_path / "state" / "approvals.db"
    store = SqliteApprovalStore(path)
    store.open(record())
    store.set_card("a1", "$card")
    store.close()

    reopened = SqliteApprovalStore(path)

    assert reopened.by_card("$card").pending
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
