"""What each bot's sync asks the homeserver for: no typing notices, receipts or presence, which nothing reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.matrix.appservice.inbox import BotInbox
from mindroom.matrix.credentials import SyncTokenStore
from mindroom.matrix.sync import SyncLoop
from mindroom.matrix.transport import JsonReply

pytestmark = pytest.mark.asyncio


class _RecordingTransport:
    """Answers every sync with an empty batch and keeps the filters it was sent; stops after `limit` syncs."""

    def __init__(self, limit: int) -> None:
        self.filters: list[dict[str, Any]] = []
        self._limit = limit
        self.done = asyncio.Event()

    async def request(self, method: str, path: str, *, query: Mapping[str, str] | None = None, **_: Any) -> JsonReply:
        assert path == "/_matrix/client/v3/sync"
        self.filters.append(json.loads((query or {})["filter"]))
        if len(self.filters) >= self._limit:
            self.done.set()
            await asyncio.Event().wait()
        return JsonReply(200, {"next_batch": f"s{len(self.filters)}"})


async def _nothing(_: str) -> None:
    return None


class _Decryption:
    """Takes the catch-up's batches and does nothing with them (the crypto is not what is tested here)."""

    def __init__(self) -> None:
        self.crypto = self

    async def absorb(self, batch: Any) -> None:
        return None

    async def maintain(self) -> None:
        return None


async def _filters_of_a_sync(syncs: int, storage: Path) -> list[dict[str, Any]]:
    transport = _RecordingTransport(syncs)
    loop = SyncLoop(
        bot_name="bot",
        user_id="@bot:hs",
        transport=transport,  # type: ignore[arg-type]  # the loop only calls `request`
        tokens=SyncTokenStore(storage),
        join=lambda room_id: asyncio.sleep(0, room_id),
        leave=_nothing,
        first_sync=asyncio.Event(),
        poll_timeout_ms=0,
    )

    async def ignore(*_: Any) -> Any:
        return None

    task = asyncio.create_task(loop.run(ignore, ignore))
    await asyncio.wait_for(transport.done.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return transport.filters


async def test_sync_filter_asks_for_no_typing_receipts_or_presence(tmp_path: Path):
    filters = await _filters_of_a_sync(3, tmp_path)  # the first sync of a run, then incremental ones

    assert len(filters) == 3
    for sent in filters:
        assert sent["presence"] == {"types": []}
        assert sent["room"]["ephemeral"] == {"types": []}  # m.typing and m.receipt live here
        assert sent["account_data"] == {"types": []}


async def test_sync_filter_of_an_appservice_catch_up_asks_for_no_room_events_typing_receipts_or_presence(
    tmp_path: Path,
):
    transport = _RecordingTransport(2)
    inbox = BotInbox(
        bot_name="bot",
        user_id="@bot:hs",
        device_id="DEV",
        transport=transport,  # type: ignore[arg-type]  # the inbox only calls `request`
        decryption=_Decryption(),  # type: ignore[arg-type]
        handler=_nothing,  # type: ignore[arg-type]
        on_invite=_nothing,  # type: ignore[arg-type]
        join=lambda room_id: asyncio.sleep(0, room_id),
        leave=_nothing,
    )
    tokens = SyncTokenStore(tmp_path)

    await inbox.catch_up(tokens)

    (sent,) = transport.filters
    assert sent["presence"] == {"types": []}
    assert sent["room"]["ephemeral"] == {"types": []}
    assert sent["room"]["timeline"] == {"limit": 0}
    assert tokens.load("bot") == "s1"
