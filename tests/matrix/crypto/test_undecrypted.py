"""Parked undecryptable events and who answers them: pure bookkeeping, on a fake clock."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from mindroom.matrix.crypto.undecrypted import SyncDecryption, UndecryptedEvents
from mindroom.matrix.crypto.unreadable_notices import is_daemon_account, notice_sender
from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.inbound import deliver_raw


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
    waiting.park("!other", _raw("$5", session="s3"))

    assert waiting.due_notices() == []
    assert waiting.seconds_to_next_notice() == pytest.approx(4.0)
    clock.now += 4
    assert [p.raw["event_id"] for p in waiting.due_notices()] == ["$1"]
    clock.now += 1
    # Ann's second session in the same room waits for the notice interval; in another room she is told.
    assert sorted(p.raw["event_id"] for p in waiting.due_notices()) == ["$4", "$5"]
    clock.now += 60
    assert waiting.due_notices() == []
    assert waiting.seconds_to_next_notice() is None
    waiting.park("!r", _raw("$6"))  # the same session later: already answered
    clock.now += 10
    assert waiting.due_notices() == []


def test_undecrypted_a_sender_making_up_sessions_gets_one_notice_per_room_and_interval():
    clock = Clock()
    waiting = UndecryptedEvents(notice_after_s=5.0, notice_interval_s=600.0, keep_s=3600.0, clock=clock)
    for n in range(18):
        waiting.park("!r", _raw(f"$fake{n}", sender="@mallory:hs", session=f"made-up-{n}"))
    clock.now += 6

    assert [p.raw["event_id"] for p in waiting.due_notices()] == ["$fake0"]
    for n in range(18, 30):
        waiting.park("!r", _raw(f"$fake{n}", sender="@mallory:hs", session=f"made-up-{n}"))
    clock.now += 500
    assert waiting.due_notices() == []
    waiting.park("!r", _raw("$later", sender="@mallory:hs", session="yet-another"))
    clock.now += 101  # ten minutes after the first notice
    assert [p.raw["event_id"] for p in waiting.due_notices()] == ["$later"]


def test_undecrypted_events_parked_per_sender_are_capped():
    waiting = UndecryptedEvents(max_per_sender=5, clock=Clock())
    waiting.park("!r", _raw("$ann", sender="@ann:hs"))
    for n in range(40):
        waiting.park("!r", _raw(f"$m{n}", sender="@mallory:hs", session=f"s{n}"))

    assert len(waiting) == 6
    opened = waiting.readable(lambda room_id, raw: {"event_id": raw["event_id"]})
    assert [raw["event_id"] for _, raw in opened] == ["$ann", "$m35", "$m36", "$m37", "$m38", "$m39"]


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
    """A device that holds no room keys and records what it was asked; `!plain` rooms are not encrypted."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.key_requests: list[str] = []

    def decrypt(self, room_id, raw) -> dict | None:
        self.asked.append(raw["event_id"])
        return None

    def request_key(self, room_id, raw):
        self.key_requests.append(raw["event_id"])
        return True

    async def room_encrypted(self, room_id: str) -> bool:
        return not room_id.startswith("!plain")

    async def maintain(self) -> None:
        return None


def test_sync_decryption_passes_a_redacted_encrypted_event_through_without_parking_it():
    crypto = NoKeys()
    decryption = SyncDecryption(crypto, "bot")  # type: ignore[arg-type]
    redacted = {"event_id": "$gone", "sender": "@ann:hs", "type": "m.room.encrypted", "content": {}}
    sealed = {**_raw("$sealed"), "content": {"ciphertext": "AwgA", "session_id": "s1"}}

    assert decryption.open("!r", redacted) == redacted
    assert decryption.open("!r", sealed) is None
    assert crypto.asked == ["$sealed"]
    assert len(decryption.waiting) == 1


def _sealed(event_id: str, sender: str, session: str = "s1") -> dict:
    raw = _raw(event_id, sender=sender, session=session)
    return {**raw, "origin_server_ts": 1, "content": {"ciphertext": "AwgA", "session_id": session}}


def test_sync_decryption_parks_and_asks_keys_only_for_authorized_senders():
    crypto = NoKeys()
    decryption = SyncDecryption(crypto, "bot", authorized=lambda room_id, sender: sender == "@ann:hs")  # type: ignore[arg-type]

    for n in range(18):
        assert decryption.open("!r", _sealed(f"$fake{n}", "@mallory:hs", session=f"made-up-{n}")) is None
    assert decryption.open("!r", _sealed("$real", "@ann:hs")) is None

    assert crypto.key_requests == ["$real"]
    assert len(decryption.waiting) == 1


@pytest.mark.asyncio
async def test_sync_decryption_answers_authorized_senders_and_only_in_encrypted_rooms():
    answered: list[str] = []
    allowed = {"@ann:hs"}

    async def answer(event) -> None:
        answered.append(event.event_id)

    clock = Clock()
    crypto = NoKeys()
    waiting = UndecryptedEvents(notice_after_s=5.0, clock=clock)
    decryption = SyncDecryption(
        crypto,  # type: ignore[arg-type]
        "bot",
        answer,
        waiting,
        authorized=lambda room_id, sender: sender in allowed,
    )
    decryption.open("!sealed", _sealed("$in-sealed", "@ann:hs"))
    decryption.open("!plain", _sealed("$in-plain", "@ann:hs", session="s2"))
    decryption.open("!sealed", _sealed("$revoked", "@bob:hs", session="s3"))
    allowed.add("@bob:hs")
    decryption.open("!sealed", _sealed("$revoked", "@bob:hs", session="s3"))
    allowed.discard("@bob:hs")  # the config changed before the notice fell due
    clock.now += 6

    async def deliver(room_id, raw) -> None:
        raise AssertionError("nothing can be read")

    await decryption.settle(deliver)

    assert answered == ["$in-sealed"]


class SomeKeys(NoKeys):
    """A device that holds the room keys of `sessions` (more can come later)."""

    def __init__(self, *sessions: str) -> None:
        super().__init__()
        self.sessions = set(sessions)

    def decrypt(self, room_id, raw) -> dict | None:
        self.asked.append(raw["event_id"])
        if raw["content"]["session_id"] not in self.sessions:
            return None
        return {**raw, "type": "m.room.message", "content": {"msgtype": "m.text", "body": "secret words"}}


@pytest.mark.asyncio
async def test_sync_decryption_counts_the_messages_held_by_a_lost_store_and_names_those_still_unreadable():
    crypto = SomeKeys("restored")
    decryption = SyncDecryption(crypto, "bot", restored_at_ms=5_000)  # type: ignore[arg-type]
    delivered: list[MatrixEvent] = []

    async def handler(event: MatrixEvent) -> None:
        delivered.append(event)

    async def late(room_id: str, raw: dict) -> None:
        await deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)

    def sealed(event_id: str, session: str, ts: int) -> dict:
        return {**_sealed(event_id, "@ann:hs", session=session), "origin_server_ts": ts}

    with capture_logs() as logs:
        await deliver_raw("bot", decryption, "!r", sealed("$held", "restored", 4_999), handler)
        await deliver_raw("bot", decryption, "!r", sealed("$later", "restored", 5_000), handler)
        await deliver_raw("bot", decryption, "!r", sealed("$lost", "missing", 4_000), handler)
        await deliver_raw("bot", decryption, "!r", sealed("$unheld", "missing-too", 6_000), handler)
        await decryption.settle(
            lambda room_id, raw: deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)
        )
        crypto.sessions.add("missing")  # its key comes after all (a sender shares it again)
        await decryption.settle(
            lambda room_id, raw: deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)
        )
        await decryption.settle(
            lambda room_id, raw: deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)
        )

    assert [(e.event_id, e.after_restore) for e in delivered] == [("$held", True), ("$later", False), ("$lost", True)]
    counts = [e["messages"] for e in logs if e["event"] == "held messages decrypted after the key restore"]
    assert counts == [1, 1]
    unreadable = [e for e in logs if e["event"] == "held message still unreadable after the key restore"]
    assert [(e["log_level"], e["room_id"], e["session_id"], e["event_id"]) for e in unreadable] == [
        ("warning", "!r", "missing", "$lost")
    ]
    assert not any("AwgA" in str(e) or "secret words" in str(e) for e in logs)  # never the content


@pytest.mark.asyncio
async def test_sync_decryption_without_a_restore_holds_nothing():
    decryption = SyncDecryption(SomeKeys("s1"), "bot")  # type: ignore[arg-type]
    delivered: list[MatrixEvent] = []

    async def handler(event: MatrixEvent) -> None:
        delivered.append(event)

    async def late(room_id: str, raw: dict) -> None:
        await deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)

    with capture_logs() as logs:
        await deliver_raw("bot", decryption, "!r", _sealed("$old", "@ann:hs"), handler)
        await deliver_raw("bot", decryption, "!r", _sealed("$unknown", "@ann:hs", session="s9"), handler)
        await decryption.settle(
            lambda room_id, raw: deliver_raw("bot", decryption, room_id, raw, handler, decrypted=True)
        )

    assert [(e.event_id, e.after_restore) for e in delivered] == [("$old", False)]
    assert not [e for e in logs if "held" in e["event"]]
