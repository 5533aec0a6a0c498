"""Parked undecryptable events and who answers them: pure bookkeeping, on a fake clock."""

from __future__ import annotations

import pytest

from mindroom.matrix.notices import is_daemon_account, notice_sender
from mindroom.matrix.undecrypted import SyncDecryption, UndecryptedEvents


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _raw(event_id: str, sender: str = "@ann:hs", session: str = "s1") -> dict:
    return {"event_id": event_id, "sender": sender, "type": "m.room.encrypted", "content": {"session_id": session}}


def test_undecrypted_one_notice_per_sender_session_after_the_delay():
    clock = Clock()
    waiting = UndecryptedEvents(notice_after_s=5.0, clock=clock)
    assert waiting.park("!r", _raw("$1"))
    assert not waiting.park("!r", _raw("$1"))
    clock.now += 1
    waiting.park("!r", _raw("$2"))
    waiting.park("!r", _raw("$3", session="s2"))
    waiting.park("!r", _raw("$4", sender="@bob:hs"))

    assert waiting.due_notices() == []
    assert waiting.seconds_to_next_notice() == pytest.approx(4.0)
    clock.now += 4
    assert [p.raw["event_id"] for p in waiting.due_notices()] == ["$1"]
    clock.now += 1
    assert sorted(p.raw["event_id"] for p in waiting.due_notices()) == ["$3", "$4"]
    clock.now += 60
    assert waiting.due_notices() == []
    assert waiting.seconds_to_next_notice() is None
    waiting.park("!r", _raw("$5"))  # the same session later: already answered
    clock.now += 10
    assert waiting.due_notices() == []


def test_undecrypted_a_notice_that_failed_to_go_out_is_due_again():
    clock = Clock()
    waiting = UndecryptedEvents(notice_after_s=5.0, clock=clock)
    waiting.park("!r", _raw("$1"))
    clock.now += 6
    [due] = waiting.due_notices()

    waiting.notice_failed(due)

    assert waiting.due_notices() == [due]
    assert waiting.due_notices() == []


def test_undecrypted_readable_events_leave_and_old_ones_are_given_up():
    clock = Clock()
    waiting = UndecryptedEvents(keep_s=100.0, clock=clock)
    waiting.park("!r", _raw("$old"))
    clock.now += 50
    waiting.park("!r", _raw("$new"))
    keys = {"$new"}

    def decrypt(room_id, raw):
        return {"event_id": raw["event_id"], "type": "m.room.message"} if raw["event_id"] in keys else None

    assert waiting.readable(decrypt) == [("!r", {"event_id": "$new", "type": "m.room.message"})]
    assert len(waiting) == 1
    clock.now += 51
    assert waiting.readable(decrypt) == []
    assert len(waiting) == 0


@pytest.mark.parametrize(
    ("members", "answers"),
    [
        (["@ann:hs", "@mindroom_router:hs", "@mindroom_alpha:hs"], "@mindroom_router:hs"),
        (["@ann:hs", "@mindroom_beta:hs", "@mindroom_alpha:hs"], "@mindroom_alpha:hs"),
        (["@ann:hs", "@mindroom_alpha:elsewhere"], None),
        (["@ann:hs"], None),
    ],
)
def test_notice_sender_is_the_router_else_the_lowest_daemon_account(members, answers):
    assert notice_sender(members, "hs", "mindroom_") == answers


def test_is_daemon_account_needs_prefix_and_server():
    assert is_daemon_account("@mindroom_alpha:hs", "hs", "mindroom_")
    assert not is_daemon_account("@alpha:hs", "hs", "mindroom_")
    assert not is_daemon_account("@mindroom_alpha:other", "hs", "mindroom_")


class NoKeys:
    """A device that holds no room keys and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def decrypt(self, room_id, raw) -> dict | None:
        self.asked.append(raw["event_id"])
        return None

    def request_key(self, room_id, raw):
        return True


def test_sync_decryption_passes_a_redacted_encrypted_event_through_without_parking_it():
    crypto = NoKeys()
    decryption = SyncDecryption(crypto, "bot")  # type: ignore[arg-type]
    redacted = {"event_id": "$gone", "sender": "@ann:hs", "type": "m.room.encrypted", "content": {}}
    sealed = {**_raw("$sealed"), "content": {"ciphertext": "AwgA", "session_id": "s1"}}

    assert decryption.open("!r", redacted) == redacted
    assert decryption.open("!r", sealed) is None
    assert crypto.asked == ["$sealed"]
    assert len(decryption.waiting) == 1
