"""A bot's appservice inbox reading its device's inbox: what a transaction brought is not taken a second time."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.matrix.appservice import inbox as inbox_module
from mindroom.matrix.appservice.inbox import BotInbox
from mindroom.matrix.appservice.transactions import InboxPart
from mindroom.matrix.credentials import SyncTokenStore
from mindroom.matrix.delivery import REFUSED_RETRY_S
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.transport import JsonReply

pytestmark = pytest.mark.asyncio


class _Homeserver:
    """Answers each sync with the next of `replies`; keeps the positions it was asked from."""

    def __init__(self, *replies: dict[str, Any]) -> None:
        self._replies = list(replies)
        self.since: list[str | None] = []

    async def request(self, method: str, path: str, *, query: Mapping[str, str] | None = None, **_: Any) -> JsonReply:
        self.since.append((query or {}).get("since"))
        return JsonReply(200, self._replies.pop(0))


class _Waiting:
    def __len__(self) -> int:
        return 0

    def seconds_to_next_notice(self) -> float | None:
        return None


class _Decryption:
    """Keeps the to-device messages it is given (the crypto itself is not what is tested here)."""

    def __init__(self) -> None:
        self.crypto = self
        self.waiting = _Waiting()
        self.to_device: list[list[str]] = []

    async def absorb(self, batch: Mapping[str, Any]) -> None:
        events = batch.get("to_device", {}).get("events", [])
        self.to_device.append([event["content"]["n"] for event in events])

    async def settle(self, deliver: Any) -> None:
        return None

    async def maintain(self) -> None:
        return None


async def _nothing(*_: Any) -> Any:
    return None


def _message(n: str, **extra: str) -> dict[str, Any]:
    return {"sender": "@ann:hs", "type": "m.room.encrypted", "content": {"n": n}, **extra}


class _Parked(list[tuple[str, dict[str, Any]]]):
    def seconds_to_next_notice(self) -> float | None:
        return None


class _RoomKeys:
    """Opens an encrypted event once a to-device message named after its session came; parks it until then."""

    def __init__(self) -> None:
        self.crypto = self
        self.waiting = _Parked()
        self.keys: set[str] = set()

    async def absorb(self, batch: Mapping[str, Any]) -> None:
        self.keys.update(event["content"]["n"] for event in batch.get("to_device", {}).get("events", []))

    async def maintain(self) -> None:
        return None

    def held(self, raw: dict[str, Any]) -> bool:
        return False  # no store was lost

    def _plain(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        if raw["content"]["session_id"] not in self.keys:
            return None
        return {**raw, "type": "m.room.message", "content": {"msgtype": "m.text", "body": "the question"}}

    def open(self, room_id: str, raw: dict[str, Any]) -> dict[str, Any] | None:
        plain = self._plain(raw)
        if plain is None:
            self.waiting.append((room_id, raw))
        return plain

    async def settle(self, deliver: Any) -> None:
        for room_id, raw in list(self.waiting):
            plain = self._plain(raw)
            if plain is not None:
                self.waiting.remove((room_id, raw))
                await deliver(room_id, plain)


def _inbox(homeserver: _Homeserver, decryption: _Decryption | _RoomKeys, handler: Any = _nothing) -> BotInbox:
    return BotInbox(
        bot_name="bot",
        user_id="@bot:hs",
        device_id="DEV",
        transport=homeserver,  # type: ignore[arg-type]  # the inbox only calls `request`
        decryption=decryption,  # type: ignore[arg-type]
        handler=handler,
        on_invite=_nothing,
        join=lambda room_id: asyncio.sleep(0, room_id),
        leave=_nothing,
    )


async def test_inbox_takes_from_the_device_inbox_only_what_no_transaction_brought(tmp_path: Path):
    homeserver = _Homeserver(
        {"next_batch": "s1"},
        {"next_batch": "s2", "to_device": {"events": [_message("in a transaction"), _message("left out")]}},
        {"next_batch": "s2"},
    )
    decryption = _Decryption()
    inbox = _inbox(homeserver, decryption)
    tokens = SyncTokenStore(tmp_path)
    await inbox.catch_up(tokens)
    part = InboxPart(to_device=[_message("in a transaction", to_user_id="@bot:hs", to_device_id="DEV")])
    await inbox.receive(part)
    before = len(decryption.to_device)

    await inbox.tidy()

    assert [n for batch in decryption.to_device[before:] for n in batch] == ["left out"]
    assert [n for batch in decryption.to_device for n in batch].count("in a transaction") == 1
    assert homeserver.since[:2] == [None, "s1"]
    assert tokens.load("bot") == "s2"


async def test_inbox_catch_up_takes_every_message_a_restart_finds_waiting(tmp_path: Path):
    homeserver = _Homeserver(
        {"next_batch": "s2", "to_device": {"events": [_message("one"), _message("two")]}},
        {"next_batch": "s3"},
    )
    decryption = _Decryption()
    tokens = SyncTokenStore(tmp_path)
    tokens.save("bot", "s1")

    await _inbox(homeserver, decryption).catch_up(tokens)

    assert decryption.to_device[0] == ["one", "two"]
    assert homeserver.since == ["s1", "s2"]  # a page of messages: it looks again until the inbox is empty
    assert tokens.load("bot") == "s3"


async def test_inbox_a_message_the_device_inbox_brought_first_is_not_taken_again_from_a_transaction(tmp_path: Path):
    homeserver = _Homeserver(
        {"next_batch": "s1", "to_device": {"events": [_message("room key")]}},
        {"next_batch": "s1"},
    )
    decryption = _Decryption()
    inbox = _inbox(homeserver, decryption)
    await inbox.catch_up(SyncTokenStore(tmp_path))

    await inbox.receive(InboxPart(to_device=[_message("room key", to_user_id="@bot:hs", to_device_id="DEV")]))

    assert [n for batch in decryption.to_device for n in batch] == ["room key"]


async def _parked_question(inbox: BotInbox, tmp_path: Path, handled: list[MatrixEvent]) -> list[MatrixEvent]:
    """Catch up, then receive an encrypted question whose key is not there yet; what was handled at once, and
    then after waiting up to 5 s for the question to be handled."""
    await inbox.catch_up(SyncTokenStore(tmp_path))
    question = {"type": "m.room.encrypted", "event_id": "$q", "sender": "@ann:hs", "origin_server_ts": 1}
    question["content"] = {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "...", "session_id": "S1"}
    try:
        await inbox.receive(InboxPart(entries=[("!room:hs", question, False)]))
        at_once = list(handled)
        for _ in range(100):
            if handled:
                break
            await asyncio.sleep(0.05)
    finally:
        await inbox.close()
    return at_once


async def test_inbox_a_key_missing_just_after_a_look_into_the_device_inbox_is_looked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The homeserver left the room key out of its transactions (it counted the service as down); the event
    # came less than the pause after the last look (here the catch-up), and no other event follows it.
    monkeypatch.setattr(inbox_module, "_INBOX_RECHECK_S", 0.3)
    homeserver = _Homeserver(
        {"next_batch": "s1"},
        {"next_batch": "s2", "to_device": {"events": [_message("S1")]}},
        {"next_batch": "s2"},
    )
    decryption = _RoomKeys()
    handled: list[MatrixEvent] = []

    async def handler(event: MatrixEvent) -> None:
        handled.append(event)

    assert await _parked_question(_inbox(homeserver, decryption, handler), tmp_path, handled) == []

    assert [(event.event_id, event.content["body"]) for event in handled] == [("$q", "the question")]
    assert homeserver.since == [None, "s1", "s2"]


class _NoticeSoon(_Parked):
    def seconds_to_next_notice(self) -> float | None:
        return 0.3 if self else None


async def test_inbox_the_device_inbox_is_read_once_more_before_an_unreadable_message_is_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The key was not there at the first look after the event was parked; it is there when the notice is due.
    monkeypatch.setattr(inbox_module, "_INBOX_RECHECK_S", 0.05)
    homeserver = _Homeserver(
        {"next_batch": "s1"},
        {"next_batch": "s2"},
        {"next_batch": "s3", "to_device": {"events": [_message("S1")]}},
        {"next_batch": "s3"},
    )
    decryption = _RoomKeys()
    decryption.waiting = _NoticeSoon()
    handled: list[MatrixEvent] = []

    async def handler(event: MatrixEvent) -> None:
        handled.append(event)

    assert await _parked_question(_inbox(homeserver, decryption, handler), tmp_path, handled) == []

    assert [event.event_id for event in handled] == ["$q"]
    assert homeserver.since == [None, "s1", "s2", "s3"]


class _Outage:
    """Refuses the connection `refused` times, breaks it `broken` times, answers 503 once, then answers."""

    def __init__(self, refused: int, broken: int) -> None:
        self.failures = [True] * refused + [False] * broken
        self.overloaded = True

    async def request(self, method: str, path: str, **_: Any) -> JsonReply:
        if self.failures:
            refused = self.failures.pop(0)
            raise MatrixConnectionError("refused" if refused else "reset", refused=refused)
        if self.overloaded:
            self.overloaded = False
            return JsonReply(503, {"errcode": "M_UNKNOWN"})
        return JsonReply(200, {"next_batch": "s1"})


async def test_inbox_catch_up_waits_through_an_outage_as_the_sync_does(tmp_path: Path, monkeypatch):
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(inbox_module.asyncio, "sleep", record)

    await _inbox(_Outage(refused=6, broken=2), _Decryption()).catch_up(SyncTokenStore(tmp_path))  # type: ignore[arg-type]

    assert len(waits) == 9
    assert all(0.9 * REFUSED_RETRY_S <= wait <= REFUSED_RETRY_S for wait in waits[:6])  # a refusal does not grow it
    for wait, step in zip(waits[6:], [0.5, 1.0, 2.0], strict=True):  # failures that reached it back off, 503 too
        assert step <= wait <= step * 1.1
