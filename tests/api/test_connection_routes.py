"""The operator's OAuth routes on the real app, with a real authorization server on loopback: the providers
with their state and the people connected, never a token; a disconnect revokes at the server (the refresh
token no longer works there) and forgets the connection; nothing without the dashboard's key."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from mindroom.config.oauth import OAuthProviderConfig
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.service import OAuthConnections, provide_connections
from mindroom.oauth.vault import OAuthTokens, TokenVault
from mindroom.state.sqlite.connections import SqliteConnectionStore
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve, provider_entry

pytestmark = pytest.mark.asyncio

KEY = "dashboard-key-123456"
HELPER = {"display_name": "Helper", "role": "Helps", "rooms": ["lobby"]}
ALICE, BOB = "@alice:localhost", "@bob:localhost"


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


@pytest_asyncio.fixture
async def app(make_api, tmp_path: Path, server: LoopbackAuthServer) -> AsyncIterator[tuple[Any, OAuthConnections]]:
    """The app with connections to `acme` (the loopback server) and `beta` (no client secret: not ready)."""
    api = await make_api({"helper": HELPER}, env={"MINDROOM_API_KEY": KEY})
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{api.url}/api/oauth/acme/callback")
    beta = OAuthProviderConfig(
        display_name="Beta <b>Corp</b>",
        authorization_url="https://id.beta.example/a",
        token_url="https://id.beta.example/t",
        client_id="beta-app",
    )
    entries = {"acme": provider_entry(server), "beta": beta}
    vault = TokenVault(SqliteConnectionStore(tmp_path / "oauth" / "connections.db"), Sealer(os.urandom(32)))
    connections = OAuthConnections(vault, lambda: entries, {"MINDROOM_PUBLIC_URL": api.url}, tmp_path)
    withdraw = provide_connections(api.view.running.paths.storage_root, connections)
    yield api, connections
    withdraw()


async def _connect(api: Any, connections: OAuthConnections, person: str, user: str) -> None:
    """`person`'s browser follows their connect link, approves as `user` at the server, and comes back."""
    browser = api.client()
    opened = await browser.get(connections.connect_link(person, "acme"))
    callback, _, _ = await approve(opened.headers["location"], user)
    assert (await browser.get(callback)).status_code == 200


def _no_secret_in(response: httpx.Response, secrets: list[str]) -> None:
    seen = response.text + repr(dict(response.headers))
    assert not [value for value in secrets if value in seen], response.url


async def _refresh_at_server(server: LoopbackAuthServer, refresh_token: str) -> httpx.Response:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": CLIENT_ID}
    async with httpx.AsyncClient() as client:
        return await client.post(server.token_url, data={**form, "client_secret": CLIENT_SECRET})


async def test_connection_routes_list_providers_and_people_without_tokens(app, server):
    api, connections = app
    await _connect(api, connections, ALICE, "alice-at-acme")
    keyed = api.client(KEY)

    listed = await keyed.get("/api/oauth/providers")
    status = await keyed.get("/api/oauth/acme/status")
    beta = await keyed.get("/api/oauth/beta/status")
    unknown = await keyed.get("/api/oauth/acme2/status")  # a provider id one character longer

    assert (listed.status_code, status.status_code, beta.status_code, unknown.status_code) == (200, 200, 200, 404)
    acme, not_ready = listed.json()["providers"]
    assert acme == status.json() and not_ready == beta.json()
    assert (acme["provider"], acme["ready"], acme["has_client_config"], acme["problem"]) == ("acme", True, True, None)
    assert acme["scopes"] == ["profile"] and acme["revocable"] and acme["connected"]
    [alice] = acme["connections"]
    assert (alice["person"], alice["state"], alice["scopes"], alice["refreshable"]) == (
        ALICE,
        "connected",
        ["profile"],
        True,
    )
    assert alice["expires_at"] > alice["connected_at"] > 0
    assert (not_ready["provider"], not_ready["display_name"], not_ready["ready"]) == ("beta", "Beta <b>Corp</b>", False)
    assert "needs client_id and client_secret" in not_ready["problem"] and not_ready["connections"] == []
    assert "acme" in unknown.json()["detail"]
    issued = [*server.issued(), CLIENT_SECRET]
    assert len(issued) == 3
    for response in (listed, status, beta):
        _no_secret_in(response, issued)


async def test_connection_routes_refuse_every_caller_without_the_key(app):
    api, connections = app
    connections.vault.save(ALICE, "acme", OAuthTokens("alice-access-token-x", "https://id/t"))
    keyless, wrong = api.client(), api.client(KEY + "x")
    calls = [
        ("GET", "/api/oauth/providers", None),
        ("GET", "/api/oauth/acme/status", None),
        ("POST", "/api/oauth/acme/disconnect", {"person": ALICE}),
    ]

    answers = [
        await client.request(method, path, json=body) for client in (keyless, wrong) for method, path, body in calls
    ]

    assert [answer.status_code for answer in answers] == [401] * 6
    assert connections.connections(ALICE) == ["acme"]
    for answer in answers:
        _no_secret_in(answer, ["alice-access-token-x"])


async def test_connection_routes_disconnect_revokes_at_the_server_and_forgets(app, server):
    api, connections = app
    await _connect(api, connections, ALICE, "alice-at-acme")
    await _connect(api, connections, BOB, "bob-at-acme")
    kept = connections.vault.load(ALICE, "acme")
    assert kept is not None and kept.refresh_token
    keyed = api.client(KEY)

    near = await keyed.post("/api/oauth/acme/disconnect", json={"person": ALICE + ".evil.example"})
    done = await keyed.post("/api/oauth/acme/disconnect", json={"person": ALICE})
    again = await keyed.post("/api/oauth/acme/disconnect", json={"person": ALICE})
    refreshed = await _refresh_at_server(server, kept.refresh_token)
    after = await keyed.get("/api/oauth/acme/status")

    assert near.status_code == 404 and again.status_code == 404
    assert done.status_code == 200
    assert done.json() == {
        "status": "disconnected",
        "provider": "acme",
        "person": ALICE,
        "revoked": True,
        "problem": None,
    }
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert server.live_tokens("alice-at-acme") == [] and server.live_tokens("bob-at-acme")
    assert [connection["person"] for connection in after.json()["connections"]] == [BOB]
    assert connections.connections(ALICE) == []
    for response in (near, done, again, after):
        _no_secret_in(response, [*server.issued(), CLIENT_SECRET])


async def test_connection_routes_a_provider_gone_from_the_config_still_lists_and_forgets_its_people(app, tmp_path):
    api, connections = app
    connections.vault.save(ALICE, "gone", OAuthTokens("alice-gone-token", "https://id.gone.example/t", None, 1.0))
    connections.vault.save(BOB, "gone", OAuthTokens("bob-gone-token", "https://id.gone.example/t"))
    keyed = api.client(KEY)

    listed = await keyed.get("/api/oauth/providers")
    done = await keyed.post("/api/oauth/gone/disconnect", json={"person": ALICE})
    after = await keyed.get("/api/oauth/gone/status")

    gone = listed.json()["providers"][-1]
    assert (gone["provider"], gone["ready"], gone["connected"]) == ("gone", False, True)
    assert "not in the config" in gone["problem"]
    states = {connection["person"]: connection["state"] for connection in gone["connections"]}
    assert states == {ALICE: "expired", BOB: "connected"}  # alice's ended and cannot be refreshed
    assert done.status_code == 200 and done.json()["revoked"] is False
    assert [connection["person"] for connection in after.json()["connections"]] == [BOB]
    _no_secret_in(listed, ["alice-gone-token", "bob-gone-token"])
