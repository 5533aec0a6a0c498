"""OAuth connections on the real daemon and a real Synapse: `!connect` in a direct message gives the link, a
browser (httpx) follows it through a real authorization server on loopback back to the daemon's callback,
and the agent's `oauth_api` tool then calls the provider's API with that person's token. In a room where
someone else could open it first, no link is given; a person who has not connected gets, instead of an answer
from the API, the link in a direct message, and elsewhere the advice to connect in one."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.wiring import DaemonApiView
from mindroom.homeserver.synapse import free_port
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_tools import last_tool_message
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]

_LINK = re.compile(r"https?://\S+/api/oauth/acme/authorize\?link=[\w-]+")


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


def public_at_free_port(e2e: E2E, **values: str) -> tuple[int, str]:
    """A free loopback port and its URL, which the daemon started next takes as its public URL (`values` are
    in its environment too)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environment = e2e.environment
    e2e.environment = lambda path: dataclasses.replace(  # type: ignore[method-assign]
        environment(path), values={"MINDROOM_PUBLIC_URL": base, **values}
    )
    return port, base


def daemon_api(e2e: E2E, port: int) -> ApiServer:
    """The running daemon's HTTP API (its OAuth routes among it) at `port`, for `async with`."""
    assert e2e.daemon is not None
    ctx = ApiContext(DaemonApiView(e2e.daemon), api_settings({"MINDROOM_API_KEY": "dashboard-key"}, port=port))
    return ApiServer(ctx, create_app(ctx))


def _body(event: dict[str, Any]) -> str:
    return str(event.get("content", {}).get("body", ""))


async def _world(
    e2e: E2E, server: LoopbackAuthServer, humans: list[HumanClient], database_url: str | None
) -> tuple[str, str, int]:
    """The daemon with one agent having `oauth_api`, public at a free port; the agent, its room, the port."""
    port, base = public_at_free_port(e2e)
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{base}/api/oauth/acme/callback")
    agent, room = e2e.name("helper"), e2e.name("room")
    provider = {
        "authorization_url": server.authorization_url,
        "token_url": server.token_url,
        "revocation_url": server.revocation_url,
        "api_base_url": server.api_url,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }
    users = [human.user_id for human in humans]
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["oauth_api"]}}
    config = e2e.basic_config(users, agents, oauth_providers={"acme": provider})
    if database_url is not None:
        config["storage"] = {"database_url": database_url}
    await e2e.start(config)
    return agent, e2e.room_id(room), port


async def _command(human: HumanClient, room_id: str, agent_id: str, text: str) -> str:
    """The answer to a command (the router answers it in a room it manages, the agent in a DM)."""
    event_id = await human.send(room_id, text, mentions=[agent_id])
    return _body(await human.wait_for(thread_replies(event_id)))


def _stored(storage: Path, database_url: str | None) -> bytes:
    """Everything the state holds of the connections, as bytes: the SQLite files, or the table's rows."""
    if database_url is None:
        return b"".join(path.read_bytes() for path in (storage / "state").glob("connections.db*"))
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT person, provider, sealed FROM mindroom.oauth_connections").fetchall()
    return repr(rows).encode() + b"".join(bytes(row[2]) for row in rows)


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_oauth_connect_in_a_dm_then_the_tool_calls_the_api_with_that_persons_token(
    e2e: E2E, server, database: str, request: pytest.FixtureRequest
):
    database_url = request.getfixturevalue("postgres_url") if database == "postgresql" else None
    alice, bob = await e2e.human(encrypted=True), await e2e.human("bob")
    agent, room_id, port = await _world(e2e, server, [alice, bob], database_url)
    agent_id = e2e.user_id(agent)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)

    async with daemon_api(e2e, port):
        shared = await _command(alice, room_id, agent_id, "!connect acme")
        dm = await alice.create_room([agent_id], direct=True)
        await alice.wait_for_member(dm, agent_id)
        given = await _command(alice, dm, agent_id, "!connect acme")
        [link] = _LINK.findall(given)
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            opened = await browser.get(link)
            callback, _, _ = await approve(opened.headers["location"], "alice-at-acme")
            connected = await browser.get(callback)
        listed = await _command(alice, dm, agent_id, "!connections")
        stored = await asyncio.to_thread(_stored, e2e.storage, database_url)

        e2e.model_server.script(
            ToolCall("oauth_api_request", {"provider": "acme", "path": "/me"}),
            Text("You are alice-at-acme."),
            ToolCall("oauth_api_request", {"provider": "acme", "path": "/me"}),
            Text("Please connect first."),
            ToolCall("oauth_api_request", {"provider": "acme", "path": "/me"}),
            Text("Please connect with the link."),
            model="agent-model",
        )
        asked = await alice.send(dm, "who am I at acme?")
        answer = await alice.wait_for(thread_replies(asked, agent_id))
        alice_result = json.loads(last_tool_message(e2e.model_server.requests[-1]))
        bob_asked = await bob.send(room_id, "who am I at acme?", mentions=[agent_id])
        await bob.wait_for(thread_replies(bob_asked, agent_id))
        bob_result = last_tool_message(e2e.model_server.requests[-1])
        bob_dm = await bob.create_room([agent_id], encrypted=False, direct=True)
        await bob.wait_for_member(bob_dm, agent_id)
        bob_privately = await bob.send(bob_dm, "who am I at acme?")
        await bob.wait_for(thread_replies(bob_privately, agent_id))
        bob_private_result = last_tool_message(e2e.model_server.requests[-1])
        gone = await _command(alice, dm, agent_id, "!disconnect acme")

    assert "direct message" in shared and not _LINK.search(shared)
    assert opened.status_code == 302 and connected.status_code == 200
    assert listed == "Your connected accounts: acme"
    assert (alice_result["http_status"], json.loads(alice_result["body"])["user"]) == (200, "alice-at-acme")
    assert _body(answer) == "You are alice-at-acme."
    assert "not connected" in bob_result and "direct message" in bob_result and not _LINK.search(bob_result)
    assert "not connected" in bob_private_result and _LINK.search(bob_private_result)
    assert gone == "Disconnected acme and revoked its tokens."
    assert server.live_tokens("alice-at-acme") == []
    issued = server.issued()
    assert b"acme" in stored and issued and not [token for token in issued if token.encode() in stored]
