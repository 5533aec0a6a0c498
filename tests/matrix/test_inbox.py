"""A bot's appservice inbox reading its device's inbox: what a transaction brought is not taken a second time."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.matrix.credentials import SyncTokenStore
from mindroom.matrix.inbox import BotInbox
from mindroom.matrix.transactions import InboxPart
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


def _inbox(homeserver: _Homeserver, decryption: _Decryption) -> BotInbox:
    return BotInbox(
        bot_name="bot",
        user_id="@bot:hs",
        device_id="DEV",
        transport=homeserver,  # type: ignore[arg-type]  # the inbox only calls `request`
        decryption=decryption,  # type: ignore[arg-type]
        handler=_nothing,
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
