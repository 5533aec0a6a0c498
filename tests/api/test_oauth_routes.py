"""`/api/oauth/{provider}/authorize` and `/callback` on the real app, with a real authorization server on
loopback: a browser (httpx, cookies kept) opens the chat's link, approves, and comes back to the callback.
No response carries a token; a callback from another browser, or a second one, connects nobody."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from mindroom.oauth.service import OAuthConnections, provide_connections
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_SECRET, approve, make_connections

pytestmark = pytest.mark.asyncio

KEY = "dashboard-key-123456"
HELPER = {"display_name": "Helper", "role": "Helps", "rooms": ["lobby"]}
ALICE = "@alice:localhost"


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


@pytest_asyncio.fixture
async def app(make_api, tmp_path: Path, server: LoopbackAuthServer) -> AsyncIterator[tuple[Any, OAuthConnections]]:
    """The app on a started bench, with connections to `acme` (the loopback server) offered to it."""
    api = await make_api({"helper": HELPER}, env={"MINDROOM_API_KEY": KEY})
    connections = make_connections(tmp_path / "oauth", server, api.url)
    withdraw = provide_connections(api.view.running.paths.storage_root, connections)
    yield api, connections
    withdraw()


def _no_secret_in(response: httpx.Response, secrets: list[str]) -> None:
    seen = response.text + repr(dict(response.headers))
    assert not [value for value in secrets if value in seen], response.url


async def test_oauth_routes_a_browser_connects_through_link_provider_and_callback(app, server):
    api, connections = app
    link = connections.connect_link(ALICE, "acme")
    browser = api.client()

    opened = await browser.get(link)
    assert opened.status_code == 302 and opened.headers["location"].startswith(server.authorization_url)
    cookie = opened.headers["set-cookie"].lower()
    assert "httponly" in cookie and "path=/api/oauth/acme/;" in cookie and "samesite=lax" in cookie
    assert "secure" not in cookie  # the callback is plain HTTP here; an HTTPS one gets a secure cookie
    callback, _, _ = await approve(opened.headers["location"], "alice-at-acme")
    done = await browser.get(callback)

    assert done.status_code == 200 and "Your account is connected" in done.text
    assert connections.connections(ALICE) == ["acme"]
    token = await connections.token_for(ALICE, "acme")
    issued = [*server.issued(), CLIENT_SECRET]
    assert token in issued
    for response in (opened, done):
        _no_secret_in(response, issued)
    for path in ("/api/status", "/api/health", "/api/config/load"):
        answer = await api.client(KEY).request("POST" if path.endswith("load") else "GET", path)
        assert answer.status_code == 200, path
        _no_secret_in(answer, issued)
    assert (await browser.get(link)).status_code == 400  # the link worked once


async def test_oauth_routes_a_stolen_state_in_another_browser_connects_nobody(app, server):
    api, connections = app
    alice_browser, mallory_browser = api.client(), api.client()
    opened = await alice_browser.get(connections.connect_link(ALICE, "acme"))
    callback, _, _ = await approve(opened.headers["location"], "mallory-at-acme")

    stolen = await mallory_browser.get(callback)
    replayed = await alice_browser.get(callback)  # the state was used up by the refused attempt

    assert stolen.status_code == 400 and "another browser" in stolen.text
    assert replayed.status_code == 400 and "already used" in replayed.text
    assert server.state.token_requests == []
    assert connections.connections(ALICE) == []


async def test_oauth_routes_unknown_provider_and_bad_link_are_pages_not_errors(app):
    api, _ = app
    browser = api.client()

    unknown = await browser.get("/api/oauth/nope/authorize?link=x")
    bad = await browser.get("/api/oauth/acme/authorize?link=not-a-ticket")
    denied = await browser.get("/api/oauth/acme/callback?error=access_denied&state=x")
    elsewhere = await browser.get("/api/oauth/acme2/callback?code=c&state=x")

    assert (unknown.status_code, bad.status_code, denied.status_code, elsewhere.status_code) == (404, 400, 400, 404)
    assert "access_denied" in denied.text


async def test_oauth_routes_the_client_secret_in_config_is_hidden_from_every_config_read(make_api):
    secret = "literal-client-secret-in-config"
    provider = {"authorization_url": "https://id.example/a", "token_url": "https://id.example/t"}
    api = await make_api(
        {"helper": HELPER},
        env={"MINDROOM_API_KEY": KEY},
        oauth_providers={"acme": {**provider, "client_id": "app", "client_secret": secret}},
    )
    keyed = api.client(KEY)

    answers = [
        await keyed.post("/api/config/load"),
        await keyed.get("/api/config/effective"),
        await keyed.get("/api/config/raw", params={"redacted": "true"}),
    ]

    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert "acme" in answers[0].text
    for answer in answers:
        _no_secret_in(answer, [secret])
