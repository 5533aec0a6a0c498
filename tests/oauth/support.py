"""The OAuth tests' parts: connections on a real store and sealer, a browser that approves at the server."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from mindroom.config.oauth import OAuthProviderConfig
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.service import OAuthConnections
from mindroom.oauth.vault import TokenVault
from mindroom.state.connections import ConnectionStore
from mindroom.state.sqlite.connections import SqliteConnectionStore
from tests.oauth.auth_server import LoopbackAuthServer

__all__ = ["CLIENT_ID", "CLIENT_SECRET", "approve", "make_connections", "provider_entry"]

CLIENT_ID = "daemon-app"
CLIENT_SECRET = "client-secret-for-the-daemon-app"


def provider_entry(server: LoopbackAuthServer, *, revocation: bool = True) -> OAuthProviderConfig:
    """An `oauth_providers` entry for the loopback server, with the daemon's client."""
    return OAuthProviderConfig(
        authorization_url=server.authorization_url,
        token_url=server.token_url,
        revocation_url=server.revocation_url if revocation else None,
        api_base_url=server.api_url,
        scopes=["profile"],
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
    )


def make_connections(
    tmp_path: Path, server: LoopbackAuthServer, base_url: str, store: ConnectionStore | None = None, **entry: bool
) -> OAuthConnections:
    """Connections to provider `acme` (the loopback server), sealed with a fresh key, called back at `base_url`."""
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{base_url}/api/oauth/acme/callback")
    store = store or SqliteConnectionStore(tmp_path / "state" / "connections.db")
    vault = TokenVault(store, Sealer(os.urandom(32)))
    entries = {"acme": provider_entry(server, **entry)}
    return OAuthConnections(vault, lambda: entries, {"MINDROOM_PUBLIC_URL": base_url}, tmp_path)


async def approve(authorization_url: str, user: str) -> tuple[str, str, str]:
    """Open the provider's page and approve as `user`, as a person's browser would: where it sends the browser
    back to (the callback URL), and the `code` and `state` in it."""
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        page = await browser.get(authorization_url)
        assert page.status_code == 200, page.text
        answer = await browser.post(authorization_url, data={"approve_as": user})
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    query = parse_qs(urlsplit(location).query)
    return location, query["code"][0], query["state"][0]
