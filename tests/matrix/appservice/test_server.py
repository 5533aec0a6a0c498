"""The appservice listener over HTTP: every transaction accepted, queued until the bots receive, taken once.

A transaction the homeserver sees refused marks the service down, and what it then sends again has lost
its to-device messages: so nothing here may answer anything but 200 to a well-formed, authorized one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from mindroom.homeserver.synapse import free_port
from mindroom.matrix.appservice.registration_file import AppserviceRegistration
from mindroom.matrix.appservice.server import Appservice
from mindroom.matrix.appservice.transactions import InboxPart

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


@contextlib.asynccontextmanager
async def serving_appservice(*routes: web.RouteDef) -> AsyncIterator[Appservice]:
    """An `Appservice` started against a stand-in homeserver on loopback: its ping and `/versions`, and `routes`."""

    async def ping(_: web.Request) -> web.Response:
        return web.json_response({})

    async def versions(_: web.Request) -> web.Response:
        return web.json_response({"versions": ["v1.11"]})

    homeserver = web.Application()
    homeserver.router.add_post("/_matrix/client/v1/appservice/{id}/ping", ping)
    homeserver.router.add_get("/_matrix/client/versions", versions)
    homeserver.add_routes(routes)
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


@pytest_asyncio.fixture
async def appservice() -> AsyncIterator[Appservice]:
    async with serving_appservice() as service:
        yield service


async def _put(service: Appservice, txn_id: str, *event_ids: str, token: str | None = None) -> int:
    events = [
        {"room_id": "!room", "event_id": event_id, "sender": "@ann:hs", "type": "m.room.message", "content": {}}
        for event_id in event_ids
    ]
    headers = {"Authorization": f"Bearer {token or service.registration.hs_token}"}
    url = f"{service.registration.url}/_matrix/app/v1/transactions/{txn_id}"
    async with aiohttp.ClientSession() as session, session.put(url, json={"events": events}, headers=headers) as reply:
        return reply.status


async def _raw_put(
    service: Appservice, path: str, headers: list[bytes], event_id: str = "$sneaked"
) -> tuple[int, dict[str, Any]]:
    """One request written byte by byte (a client library would refuse or re-encode odd header bytes)."""
    event = {"room_id": "!room", "event_id": event_id, "sender": "@ann:hs", "type": "m.room.message", "content": {}}
    body = json.dumps({"events": [event]}).encode()
    host, port = service.registration.listen_address
    reader, writer = await asyncio.open_connection(host, port)
    head = [f"PUT {path} HTTP/1.1".encode(), f"Host: {host}".encode(), b"Content-Type: application/json"]
    head += [*headers, f"Content-Length: {len(body)}".encode(), b"Connection: close"]
    writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
    await writer.drain()
    reply = await reader.read()
    writer.close()
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2] or b"{}")


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


async def test_appservice_server_takes_a_renumbered_transaction_as_new_and_a_repeated_one_once(appservice: Appservice):
    inbox = _Inbox("@mr_a:hs")
    appservice.router.register(inbox.user_id)
    appservice.router.set_rooms(inbox.user_id, {"!room"})
    task = await _serve(appservice, inbox)
    appservice.open()
    assert [await _put(appservice, "1", "$1"), await _put(appservice, "2", "$2")] == [200, 200]
    await _received(inbox, 2)

    # A homeserver that restarted (Synapse on SQLite) numbers its transactions from 1 again.
    assert [await _put(appservice, "1", "$3"), await _put(appservice, "2", "$2", "$4")] == [200, 200]

    assert await _received(inbox, 4) == ["$1", "$2", "$3", "$4"]
    await _put(appservice, "3", "$5")
    assert await _received(inbox, 5) == ["$1", "$2", "$3", "$4", "$5"]  # $2 sent again was not taken again
    assert [await _put(appservice, "²", "$6"), await _put(appservice, "9" * 5000, "$7")] == [200, 200]
    assert await _received(inbox, 7) == ["$1", "$2", "$3", "$4", "$5", "$6", "$7"]  # ids that are no plain number
    task.cancel()


async def _served(appservice: Appservice) -> tuple[_Inbox, asyncio.Task[None]]:
    inbox = _Inbox("@mr_a:hs")
    appservice.router.register(inbox.user_id)
    appservice.router.set_rooms(inbox.user_id, {"!room"})
    task = await _serve(appservice, inbox)
    appservice.open()
    return inbox, task


async def test_appservice_server_answers_a_request_without_a_token_401_and_delivers_nothing(appservice: Appservice):
    inbox, task = await _served(appservice)
    path = "/_matrix/app/v1/transactions/1"

    status, body = await _raw_put(appservice, path, [])

    assert (status, body.get("errcode")) == (401, "M_UNAUTHORIZED")
    assert await _put(appservice, "2", "$control") == 200
    assert await _received(inbox, 1) == ["$control"]  # nothing of the refused transaction came before it
    task.cancel()


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(lambda token: b"Bearer " + "ä".encode(), id="non-ascii-utf8"),
        pytest.param(lambda token: b"Bearer \xe4", id="non-ascii-latin1"),
        pytest.param(lambda token: f"Bearer {token}x".encode(), id="suffix"),
        pytest.param(lambda token: f"Bearer {token[:-1]}".encode(), id="prefix"),
        pytest.param(lambda token: f"Bearer x{token}".encode(), id="prepended"),
        pytest.param(lambda token: b"Bearer ", id="empty"),
        pytest.param(lambda token: f"Basic {token}".encode(), id="another-scheme"),
    ],
)
async def test_appservice_server_answers_a_wrong_token_403_and_delivers_nothing(
    appservice: Appservice, authorization: Callable[[str], bytes]
):
    inbox, task = await _served(appservice)
    header = b"Authorization: " + authorization(appservice.registration.hs_token)

    status, body = await _raw_put(appservice, "/_matrix/app/v1/transactions/1", [header])

    assert (status, body.get("errcode")) == (403, "M_FORBIDDEN")
    assert await _put(appservice, "2", "$control") == 200
    assert await _received(inbox, 1) == ["$control"]
    task.cancel()


async def test_appservice_server_takes_the_token_in_the_query_and_refuses_a_query_that_disagrees(
    appservice: Appservice,
):
    inbox, task = await _served(appservice)
    token = appservice.registration.hs_token
    path = "/_matrix/app/v1/transactions/{}?access_token={}"

    header = f"Authorization: Bearer {token}".encode()
    refused = await _raw_put(appservice, path.format(1, token + "x"), [], "$refused")
    disagreeing = await _raw_put(appservice, path.format(2, "other"), [header], "$disagreeing")
    accepted = await _raw_put(appservice, path.format(3, token), [], "$accepted")

    assert [refused[0], disagreeing[0], accepted[0]] == [403, 403, 200]
    assert await _received(inbox, 1) == ["$accepted"]
    task.cancel()


async def test_appservice_server_refuses_pings_and_queries_without_the_token(appservice: Appservice):
    url = appservice.registration.url + "/_matrix/app/v1"
    token = appservice.registration.hs_token
    async with aiohttp.ClientSession() as session:
        statuses = []
        for headers in ({}, {"Authorization": f"Bearer {token}x"}, {"Authorization": f"Bearer {token}"}):
            async with session.post(url + "/ping", json={}, headers=headers) as reply:
                statuses.append(reply.status)
            async with session.get(url + "/users/@mr_x:hs", headers=headers) as reply:
                statuses.append(reply.status)

    assert statuses == [401, 401, 403, 403, 200, 404]
