"""A room whose encryption state cannot be read is never sent to: no plaintext on a guess.

The homeserver here is a small HTTP server on loopback that answers the one request that decides it (the
room's `m.room.encryption` state) as an unwell homeserver or a proxy in front of it does, and records every
event sent. The client, its transport and its crypto are the daemon's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from mindroom.matrix import MatrixBotClient, MatrixEncryptionError

pytestmark = pytest.mark.asyncio

ROOM = "!unsure:localhost"


@dataclass
class Homeserver:
    """What the state request gets back, and every event PUT into a room."""

    state_status: int = 500
    state_body: bytes = b'{"errcode": "M_UNKNOWN", "error": "Internal server error"}'
    state_asked: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)

    async def state(self, request: web.Request) -> web.Response:
        self.state_asked += 1
        return web.Response(status=self.state_status, body=self.state_body, content_type="application/json")

    async def send(self, request: web.Request) -> web.Response:
        self.sent.append({"type": request.match_info["type"], "content": await request.json()})
        return web.json_response({"event_id": f"$sent{len(self.sent)}"})


@pytest_asyncio.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Homeserver, MatrixBotClient]]:
    homeserver = Homeserver()
    app = web.Application()
    app.router.add_get("/_matrix/client/v3/rooms/{room}/state/m.room.encryption/", homeserver.state)
    app.router.add_put("/_matrix/client/v3/rooms/{room}/send/{type}/{txn}", homeserver.send)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = MatrixBotClient("probe", f"http://127.0.0.1:{port}", "localhost", tmp_path)
    client._nio.access_token = "token"  # the login itself is not what is tested; the send path is
    try:
        yield homeserver, client
    finally:
        await client.close()
        await runner.cleanup()


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(500, b'{"errcode": "M_UNKNOWN", "error": "Internal server error"}', id="server-error"),
        pytest.param(502, b"<html>Bad Gateway</html>", id="a-proxy-page"),
        pytest.param(429, b'{"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 10}', id="rate-limited"),
        pytest.param(400, b'{"errcode": "M_UNRECOGNIZED"}', id="not-understood"),
    ],
)
async def test_encryption_unknown_state_refuses_to_send_and_asks_again_next_time(served, status: int, body: bytes):
    homeserver, client = served
    homeserver.state_status, homeserver.state_body = status, body

    for attempt in (1, 2):
        with pytest.raises(MatrixEncryptionError, match="encryption state is unknown"):
            await client.send_message(ROOM, f"attempt {attempt}: must never go out in the clear")
        assert homeserver.state_asked == attempt  # an unknown state is not remembered as plain

    assert homeserver.sent == []


async def test_encryption_a_room_without_encryption_state_is_sent_to_in_the_clear(served):
    """The counterpart: the same server, saying the room has no encryption state, gets the plain event."""
    homeserver, client = served
    homeserver.state_status, homeserver.state_body = 404, b'{"errcode": "M_NOT_FOUND", "error": "not found"}'

    assert await client.send_message(ROOM, "hello") == "$sent1"
    assert await client.send_message(ROOM, "again") == "$sent2"

    assert [(event["type"], event["content"]["body"]) for event in homeserver.sent] == [
        ("m.room.message", "hello"),
        ("m.room.message", "again"),
    ]
    assert homeserver.state_asked == 1  # a plain room is asked about once
