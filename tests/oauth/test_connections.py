"""`OAuthConnections` against a real authorization server on loopback: connect with PKCE, use, refresh, revoke.

The test is the person's browser: it opens the link's provider page, approves, and hands the callback's
`code` and `state` back with the cookie secret its link opening gave it.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from structlog.testing import capture_logs

from mindroom.oauth.errors import OAuthConnectionRequiredError, OAuthError, OAuthFlowError
from mindroom.oauth.flow import PendingFlows
from mindroom.oauth.service import OAuthConnections
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_SECRET, approve, make_connections

pytestmark = pytest.mark.asyncio

ALICE, BOB = "@alice:example.org", "@bob:example.org"
BASE = "https://bot.example.org"


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


@pytest.fixture
def connections(tmp_path: Path, server: LoopbackAuthServer) -> OAuthConnections:
    return make_connections(tmp_path, server, BASE)


def _ticket(link: str) -> str:
    assert link.startswith(f"{BASE}/api/oauth/acme/authorize?link=")
    return link.rsplit("=", 1)[1]


async def _connect(connections: OAuthConnections, person: str, account: str) -> None:
    authorization, secret = connections.authorize("acme", _ticket(connections.connect_link(person, "acme")))
    _, code, state = await approve(authorization, account)
    assert await connections.complete("acme", state, code, secret) == person


async def _me(server: LoopbackAuthServer, token: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(server.api_url + "/me", headers={"Authorization": f"Bearer {token}"})


async def test_connections_connect_with_pkce_then_the_token_reaches_the_api(connections, server):
    authorization, secret = connections.authorize("acme", _ticket(connections.connect_link(ALICE, "acme")))
    assert "code_challenge_method=S256" in authorization and "code_challenge=" in authorization
    location, code, state = await approve(authorization, "alice-at-acme")
    assert location.startswith(f"{BASE}/api/oauth/acme/callback?")

    await connections.complete("acme", state, code, secret)
    token = await connections.token_for(ALICE, "acme")

    assert (await _me(server, token)).json()["user"] == "alice-at-acme"
    assert server.state.token_requests[0]["code_verifier"]
    assert connections.connections(ALICE) == ["acme"]


async def test_connections_a_second_person_is_refused_with_a_link_until_they_connect(connections, server):
    await _connect(connections, ALICE, "alice-at-acme")

    with pytest.raises(OAuthConnectionRequiredError) as refused:
        await connections.token_for(BOB, "acme")
    assert refused.value.connect_url is not None
    assert f"{BASE}/api/oauth/acme/authorize?link=" in str(refused.value)
    assert connections.connections(BOB) == []

    await _connect(connections, BOB, "bob-at-acme")
    assert (await _me(server, await connections.token_for(BOB, "acme"))).json()["user"] == "bob-at-acme"
    assert (await _me(server, await connections.token_for(ALICE, "acme"))).json()["user"] == "alice-at-acme"


async def test_connections_a_token_about_to_end_is_refreshed_before_it_is_given(connections, server):
    server.set_access_token_lifetime(30)  # under the refresh margin: the next ask refreshes
    await _connect(connections, ALICE, "alice-at-acme")
    first = server.state.tokens[-1].access_token
    server.expire_access_tokens()
    assert (await _me(server, first)).status_code == 401

    fresh = await connections.token_for(ALICE, "acme")

    assert fresh != first
    assert (await _me(server, fresh)).json()["user"] == "alice-at-acme"
    assert server.state.token_requests[-1]["grant_type"] == "refresh_token"


async def test_connections_a_refused_refresh_forgets_the_connection_and_asks_to_connect(connections, server):
    server.set_access_token_lifetime(30)
    await _connect(connections, ALICE, "alice-at-acme")
    for token in server.state.tokens:
        token.revoked = True  # revoked at the provider, behind the daemon's back

    with pytest.raises(OAuthConnectionRequiredError, match="not connected"):
        await connections.token_for(ALICE, "acme")
    assert connections.connections(ALICE) == []


async def test_connections_disconnect_revokes_at_the_provider_and_forgets(connections, server):
    await _connect(connections, ALICE, "alice-at-acme")
    token = await connections.token_for(ALICE, "acme")

    reply = await connections.disconnect(ALICE, "acme")

    assert reply == "Disconnected acme and revoked its tokens."
    assert server.live_tokens("alice-at-acme") == []
    assert (await _me(server, token)).status_code == 401
    assert connections.connections(ALICE) == []
    with pytest.raises(OAuthConnectionRequiredError):
        await connections.token_for(ALICE, "acme")
    assert await connections.disconnect(ALICE, "acme") == "You have no acme connection."


async def test_connections_without_a_revocation_endpoint_disconnect_only_forgets(tmp_path, server):
    connections = make_connections(tmp_path, server, BASE, revocation=False)
    await _connect(connections, ALICE, "alice-at-acme")

    assert await connections.disconnect(ALICE, "acme") == "Disconnected acme."
    assert connections.connections(ALICE) == []


async def test_connections_a_stolen_state_from_another_browser_connects_nobody(connections, server):
    authorization, alice_secret = connections.authorize("acme", _ticket(connections.connect_link(ALICE, "acme")))
    _, _, alice_state = await approve(authorization, "alice-at-acme")
    # Mallory has Alice's state and her own code, in her own browser (another cookie, or none).
    mallory_link, mallory_secret = connections.authorize("acme", _ticket(connections.connect_link(BOB, "acme")))
    _, mallory_code, _ = await approve(mallory_link, "mallory-at-acme")

    for secret in (mallory_secret, None, alice_secret + "x"):
        with pytest.raises(OAuthFlowError):
            await connections.complete("acme", alice_state, mallory_code, secret)

    assert server.state.token_requests == []  # no code was exchanged
    assert connections.connections(ALICE) == []


async def test_connections_a_state_works_once(connections, server):
    authorization, secret = connections.authorize("acme", _ticket(connections.connect_link(ALICE, "acme")))
    _, code, state = await approve(authorization, "alice-at-acme")
    await connections.complete("acme", state, code, secret)

    with pytest.raises(OAuthFlowError, match="already used"):
        await connections.complete("acme", state, code, secret)
    assert len(server.state.token_requests) == 1


async def test_connections_a_link_works_once_for_its_provider_and_in_time(tmp_path, server):
    connections = make_connections(tmp_path, server, BASE)
    link = _ticket(connections.connect_link(ALICE, "acme"))
    connections.authorize("acme", link)
    with pytest.raises(OAuthFlowError):
        connections.authorize("acme", link)
    with pytest.raises(OAuthError, match="unknown OAuth provider 'acme2'"):
        connections.authorize("acme2", _ticket(connections.connect_link(ALICE, "acme")))

    expired = OAuthConnections(connections.vault, dict, {}, tmp_path, PendingFlows(ttl_s=0))
    ticket = expired.flows.start(ALICE, "acme")
    with pytest.raises(OAuthFlowError, match="expired"):
        expired.flows.open(ticket, "acme")


async def test_connections_tokens_are_sealed_at_rest_and_never_logged(tmp_path, connections, server):
    with capture_logs() as logs:
        await _connect(connections, ALICE, "alice-at-acme")
        server.set_access_token_lifetime(30)
        await _connect(connections, BOB, "bob-at-acme")
        await connections.token_for(BOB, "acme")
        await connections.disconnect(ALICE, "acme")

    issued = server.issued()
    assert len(issued) >= 6
    text = repr(logs)
    assert {"OAuth account connected", "OAuth token refreshed"} <= {entry["event"] for entry in logs}
    assert not [value for value in [*issued, CLIENT_SECRET] if value in text]
    database = tmp_path / "state" / "connections.db"
    raw = b"".join(path.read_bytes() for path in database.parent.glob("connections.db*"))
    assert not [value for value in issued if value.encode() in raw]
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
