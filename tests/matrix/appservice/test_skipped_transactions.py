"""Transactions the homeserver stored and never sent: the daemon sees their numbers skipped and fetches the events.

Synapse sends an application service its transactions one at a time, in order. When events come just as it
finishes catching up a service it counted as down, it stores their transaction for a catch-up that is over and
sends the next ones: that transaction waits until the service next fails, and its events with it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from mindroom.matrix.appservice.server import Appservice
from tests.matrix.appservice.test_server import _Inbox, _put, _received, _serve, serving_appservice

pytestmark = pytest.mark.asyncio


class _Room:
    """The stand-in homeserver's one room: its newest events, and who asked for them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.readers: list[str] = []

    def add(self, event_id: str) -> None:
        event = {"event_id": event_id, "sender": "@ann:hs", "type": "m.room.message", "content": {"body": event_id}}
        self.events.append({**event, "origin_server_ts": int(time.time() * 1000)})


@pytest_asyncio.fixture
async def served() -> AsyncIterator[tuple[Appservice, _Room]]:
    room = _Room()

    async def messages(request: web.Request) -> web.Response:
        room.readers.append(request.query.get("user_id", ""))
        return web.json_response({"chunk": list(reversed(room.events))})

    async with serving_appservice(web.get("/_matrix/client/v3/rooms/{room_id}/messages", messages)) as service:
        yield service, room


async def _receiving(service: Appservice) -> _Inbox:
    inbox = _Inbox("@mr_a:hs")
    service.router.register(inbox.user_id)
    service.router.set_rooms(inbox.user_id, {"!room"})
    await _serve(service, inbox)
    service.open()
    return inbox


async def test_appservice_events_of_a_transaction_the_homeserver_skipped_are_fetched_and_handed_out_once(served):
    service, room = served
    inbox = await _receiving(service)
    room.add("$1")
    room.add("$2")
    statuses = [await _put(service, "1", "$1"), await _put(service, "2", "$2"), await _put(service, "2", "$2")]
    room.add("$3")
    statuses.append(await _put(service, "3", "$3"))
    assert await _received(inbox, 3) == ["$1", "$2", "$3"]

    room.add("$4")  # the homeserver stored the fourth transaction and went on with the fifth
    room.add("$5")
    statuses.append(await _put(service, "5", "$5"))
    assert await _received(inbox, 5) == ["$1", "$2", "$3", "$5", "$4"]
    room.add("$6")
    statuses.append(await _put(service, "6", "$6"))

    assert await _received(inbox, 6) == ["$1", "$2", "$3", "$5", "$4", "$6"]
    assert statuses == [200] * 6
    # One look into the room, for the skipped transaction: none for those in order or sent again.
    assert room.readers == ["@mr_a:hs"]
