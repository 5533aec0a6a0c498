"""The appservice listener over HTTP: every transaction accepted, queued until the bots receive, taken once.

A transaction the homeserver sees refused marks the service down, and what it then sends again has lost
its to-device messages: so nothing here may answer anything but 200 to a well-formed, authorized one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from mindroom.homeserver.synapse import free_port
from mindroom.matrix.appservice import AppserviceRegistration
from mindroom.matrix.appservice_server import Appservice
from mindroom.matrix.transactions import InboxPart

pytestmark = pytest.mark.asyncio


class _Inbox:
    """A bot's receiving end: records the event ids of each part it takes."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        self.device_id = "DEV"
        self.received: list[str] = []
        self.changed = asyncio.Event()

    async def catch_up(self, tokens: Any) -> None:
        return None

    async def receive(self, part: InboxPart) -> None:
        self.received += [raw["event_id"] for _, raw, _ in part.entries]
        self.changed.set()

    async def tidy(self) -> None:
        return None

    async def close(self) -> None:
        return None


@pytest_asyncio.fixture
async def appservice() -> AsyncIterator[Appservice]:
    async def ping(_: web.Request) -> web.Response:
        return web.json_response({})

    homeserver = web.Application()
    homeserver.router.add_post("/_matrix/client/v1/appservice/{id}/ping", ping)
    runner = web.AppRunner(homeserver)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    registration = AppserviceRegistration.create(f"http://127.0.0.1:{free_port()}", "mr_", "hs")
    service = Appservice(registration, f"http://127.0.0.1:{port}")
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
        await runner.cleanup()


async def _put(service: Appservice, txn_id: str, *event_ids: str, token: str | None = None) -> int:
    events = [
        {"room_id": "!room", "event_id": event_id, "sender": "@ann:hs", "type": "m.room.message", "content": {}}
        for event_id in event_ids
    ]
    headers = {"Authorization": f"Bearer {token or service.registration.hs_token}"}
    url = f"{service.registration.url}/_matrix/app/v1/transactions/{txn_id}"
    async with aiohttp.ClientSession() as session, session.put(url, json={"events": events}, headers=headers) as reply:
        return reply.status


async def _serve(service: Appservice, inbox: _Inbox) -> asyncio.Task[None]:
    ready = asyncio.Event()
    task = asyncio.create_task(service.serve(inbox, None, ready))  # type: ignore[arg-type]  # a stand-in inbox
    await asyncio.wait_for(ready.wait(), 5)
    return task


async def _received(inbox: _Inbox, count: int) -> list[str]:
    while len(inbox.received) < count:
        inbox.changed.clear()
        await asyncio.wait_for(inbox.changed.wait(), 5)
    return inbox.received


async def test_appservice_server_queues_what_comes_before_open_and_hands_it_out_after(appservice: Appservice):
    inbox = _Inbox("@mr_a:hs")
    appservice.router.register(inbox.user_id)
    appservice.router.set_rooms(inbox.user_id, {"!room"})
    task = await _serve(appservice, inbox)

    assert await _put(appservice, "1", "$before") == 200
    await asyncio.sleep(0.05)
    assert inbox.received == []  # the daemon has not opened yet
    appservice.open()

    assert await _received(inbox, 1) == ["$before"]
    task.cancel()


async def test_appservice_server_holds_transactions_for_a_restarting_bot_in_order_and_takes_each_once(
    appservice: Appservice,
):
    first = _Inbox("@mr_a:hs")
    appservice.router.register(first.user_id)
    appservice.router.set_rooms(first.user_id, {"!room"})
    task = await _serve(appservice, first)
    appservice.open()
    assert await _put(appservice, "1", "$1") == 200
    await _received(first, 1)
    task.cancel()  # a reload restarts the bot: its next instance takes what comes meanwhile
    await asyncio.gather(task, return_exceptions=True)

    statuses = [await _put(appservice, "2", "$2"), await _put(appservice, "3", "$3"), await _put(appservice, "2", "$2")]
    second = _Inbox("@mr_a:hs")
    task = await _serve(appservice, second)

    assert statuses == [200, 200, 200]  # never refused: a refusal would cost the to-device messages
    assert await _received(second, 2) == ["$2", "$3"]
    await asyncio.sleep(0.05)
    assert second.received == ["$2", "$3"]  # the transaction sent twice is taken once
    task.cancel()


async def test_appservice_server_refuses_a_wrong_token(appservice: Appservice):
    assert await _put(appservice, "1", "$1", token="not-the-token") == 403
