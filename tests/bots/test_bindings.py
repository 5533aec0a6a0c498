"""A bot's hook capabilities: hook messages go through the router, are rate limited, and have stable ids."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from mindroom.bots.bindings import HOOK_SEND_LIMIT, BotBindings
from mindroom.bots.directory import Directory
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.recent import RecentMessages
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.constants import HOOK_SOURCE_KEY, RuntimePaths
from mindroom.hooks import HookRegistry
from mindroom.state.sqlite.rooms import SqliteRoomMemory

pytestmark = pytest.mark.asyncio


class RecordingClient:
    """Stands in for a Matrix account: records what is sent, with which transaction id."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_message(self, room_id: str, text: str, **options: Any) -> str:
        self.sent.append({"room_id": room_id, "text": text, **options})
        return f"$e{len(self.sent)}"


def bindings(tmp_path, *, router: RecordingClient | None = None) -> tuple[BotBindings, RecordingClient]:
    own = RecordingClient()
    bots = {"router": SimpleNamespace(client=router)} if router is not None else {}
    directory = Directory("localhost", SqliteRoomMemory(tmp_path / "rooms.db"), entities=bots)  # type: ignore[arg-type]
    capabilities = BotBindings(
        "helper",
        own,  # type: ignore[arg-type]
        directory=directory,
        paths=RuntimePaths.for_directory(tmp_path),
        clock=RunClock(0),
        recent=RecentMessages(),
    )
    return capabilities, own


LIVE = LiveState(config=Config(), registry=HookRegistry.empty())


def source(name: str) -> dict[str, str]:
    return {HOOK_SOURCE_KEY: name}


async def test_bindings_hook_messages_are_relayed_by_the_router(tmp_path):
    router = RecordingClient()
    capabilities, own = bindings(tmp_path, router=router)

    await capabilities.for_live(LIVE).message_sender("!r", "hello", None, source("p:h"))

    assert [m["text"] for m in router.sent] == ["hello"] and own.sent == []


async def test_bindings_turn_messages_have_ids_that_repeat_on_replay_and_differ_within_a_turn(tmp_path):
    first, client = bindings(tmp_path)
    turn = first.for_live(LIVE, turn="corr-1")
    await turn.message_sender("!r", "one", None, source("p:h"))
    await turn.message_sender("!r", "two", None, source("p:h"))
    await turn.message_sender("!r", "other", None, source("p:other"))
    replay = first.for_live(LIVE, turn="corr-1")
    await replay.message_sender("!r", "one", None, source("p:h"))
    await first.for_live(LIVE, turn="corr-2").message_sender("!r", "one", None, source("p:h"))

    ids = [message["txn_id"] for message in client.sent]
    assert len(set(ids[:3])) == 3
    assert ids[3] == ids[0]
    assert ids[4] not in ids[:4]


async def test_bindings_hook_messages_are_rate_limited_per_plugin_and_room(tmp_path):
    capabilities, client = bindings(tmp_path)
    send = capabilities.for_live(LIVE).message_sender

    results = [await send("!r", f"m{i}", None, source("noisy:h")) for i in range(HOOK_SEND_LIMIT + 3)]
    with capture_logs() as logs:
        late = await send("!r", "late", None, source("noisy:h"))
    other_room = await send("!elsewhere", "fine", None, source("noisy:h"))
    other_plugin = await send("!r", "fine", None, source("quiet:h"))

    assert all(result is not None for result in results[:HOOK_SEND_LIMIT])
    assert results[HOOK_SEND_LIMIT:] == [None, None, None] and late is None
    assert other_room is not None and other_plugin is not None
    assert [entry["event"] for entry in logs] == ["hook message rate limited"]
    assert len(client.sent) == HOOK_SEND_LIMIT + 2
