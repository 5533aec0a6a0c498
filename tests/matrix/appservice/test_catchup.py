"""What the appservice fetches after the homeserver came back, read on the session's real Synapse as one of its bots:
the events no transaction brought since the last one, after that bot's join, none seen before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
import pytest_asyncio

from mindroom.homeserver.synapse import free_port
from mindroom.matrix.appservice.catchup import SeenEvents, missed_events
from mindroom.matrix.appservice.link import HomeserverLink
from mindroom.matrix.appservice.registration_file import AppserviceRegistration
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.testing.homeserver import APPSERVICE_ACCOUNT_PREFIX, RegisteredUser, TestHomeserver, unique_localpart


@pytest_asyncio.fixture
async def link(matrix_homeserver: TestHomeserver) -> AsyncIterator[HomeserverLink]:
    if matrix_homeserver.appservice_registration is None:
        pytest.skip("the test homeserver has no application service")
    registration = AppserviceRegistration.load(matrix_homeserver.appservice_registration)
    link = HomeserverLink(matrix_homeserver.url, registration.id, registration.as_token)
    try:
        yield link
    finally:
        await link.close()


class _Account:
    def __init__(self, homeserver: TestHomeserver, user: RegisteredUser, session: aiohttp.ClientSession) -> None:
        self.user_id = user.user_id
        self._url = homeserver.url + "/_matrix/client/v3"
        self._headers = {"Authorization": f"Bearer {user.access_token}"}
        self._session = session
        self._sent = 0

    async def call(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self._session.request(method, self._url + path, json=body, headers=self._headers) as reply:
            answer = await reply.json()
            assert reply.status == 200, answer
            return dict(answer)

    async def say(self, room_id: str, body: str) -> str:
        self._sent += 1
        path = f"/rooms/{quote(room_id, safe='')}/send/m.room.message/t{self._sent}"
        return str((await self.call("PUT", path, {"msgtype": "m.text", "body": body}))["event_id"])


async def _stamps(link: HomeserverLink, room_id: str, reader: str) -> dict[str, int]:
    return {event["event_id"]: event["origin_server_ts"] for event in await link.latest_events(room_id, reader, 50)}


@pytest.mark.asyncio
async def test_appservice_catchup_fetches_what_no_transaction_brought_after_the_bots_join(
    matrix_homeserver: TestHomeserver, link: HomeserverLink
):
    async with aiohttp.ClientSession() as session:
        accounts = [
            _Account(matrix_homeserver, matrix_homeserver.register_user(unique_localpart(prefix), "pw"), session)
            for prefix in (f"{APPSERVICE_ACCOUNT_PREFIX}a", f"{APPSERVICE_ACCOUNT_PREFIX}b", "ann")
        ]
        first, second, ann = accounts
        room_id = str((await first.call("POST", "/createRoom", {"preset": "public_chat"}))["room_id"])
        early = await first.say(room_id, "before the second bot joined")
        for account in (ann, second):
            await account.call("POST", f"/join/{quote(room_id, safe='')}", {})
        handed_out, missed, later = [await ann.say(room_id, f"message {i}") for i in range(3)]
    seen = SeenEvents()
    seen.fresh([{"event_id": handed_out}])
    stamps = await _stamps(link, room_id, second.user_id)

    found = await missed_events(link, {room_id: second.user_id}, seen, last_heard_ms=stamps[early] + 60_000)
    after_the_last = await missed_events(link, {room_id: second.user_id}, seen, last_heard_ms=stamps[later] + 60_001)

    assert [event["event_id"] for event in found] == [missed, later]  # not `early`: before the second bot's join
    assert all(event["room_id"] == room_id for event in found)
    assert after_the_last == []  # older than the last transaction heard (less the margin): not fetched


@pytest.mark.asyncio
async def test_appservice_catchup_skips_a_room_its_reader_may_not_read(
    matrix_homeserver: TestHomeserver, link: HomeserverLink
):
    async with aiohttp.ClientSession() as session:
        owner = _Account(matrix_homeserver, matrix_homeserver.register_user(unique_localpart("ann"), "pw"), session)
        room_id = str((await owner.call("POST", "/createRoom", {"preset": "private_chat"}))["room_id"])
        await owner.say(room_id, "private")
    outsider = matrix_homeserver.register_user(unique_localpart(APPSERVICE_ACCOUNT_PREFIX), "pw").user_id

    assert await missed_events(link, {room_id: outsider}, SeenEvents(), last_heard_ms=0) == []


@pytest.mark.asyncio
async def test_appservice_catchup_probe_answers_and_a_closed_port_is_refused(link: HomeserverLink):
    await link.probe()

    nobody = HomeserverLink(f"http://127.0.0.1:{free_port()}", "mindroom", "token")
    with pytest.raises(MatrixConnectionError) as caught:
        await nobody.probe()
    await nobody.close()
    assert caught.value.refused


def test_appservice_catchup_seen_events_keep_order_and_forget_the_oldest():
    seen = SeenEvents(limit=2)

    assert [e["event_id"] for e in seen.fresh([{"event_id": "$1"}, {"event_id": "$2"}, {"event_id": "$1"}])] == [
        "$1",
        "$2",
    ]
    assert seen.fresh([{"event_id": "$3"}, {"no": "id"}]) == [{"event_id": "$3"}, {"no": "id"}]
    assert "$1" not in seen
    assert seen.fresh([{"event_id": "$1"}, {"event_id": "$3"}]) == [{"event_id": "$1"}]
