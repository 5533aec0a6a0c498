"""The token exchange, refresh and revocation at an MCP server's discovered endpoints go to the addresses checked
for that request: a name that answers a public address when it is checked and a loopback, LAN or metadata
address later (DNS rebinding) never receives the code, the tokens or the client secret."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from mindroom.oauth.errors import OAuthError
from mindroom.oauth.exchange import exchange_code, refresh_tokens
from mindroom.oauth.providers import ResolvedProvider
from mindroom.oauth.vault import OAuthTokens
from mindroom.tool_system.mcp.address import check_remote_url
from mindroom.tool_system.mcp.oauth_discovery import DiscoveryRules, pinned_post
from tests.tool_system.mcp.loopback import LoopbackServer
from tests.tool_system.mcp.oauth_server import free_port, loopback_mcp_auth_server
from tests.tool_system.mcp.test_oauth_servers import ALICE, RELAXED, make_connections, notes_config

pytestmark = pytest.mark.asyncio

NAME = "auth.rebind.test"
STRICT = DiscoveryRules(allow_insecure=True)  # plain HTTP on loopback here; addresses held to the rules


class Rebinding:
    """`socket.getaddrinfo` for `name`: `answers[i]` at the i-th question (the last one from then on)."""

    def __init__(self, *answers: str, name: str = NAME) -> None:
        self.name = name
        self.answers = list(answers)
        self.asked = 0
        self._real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name != self.name:
            return self._real(host, port, family, type, proto, flags)
        address = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        return self._real(address, port, family, type, proto, flags | socket.AI_NUMERICHOST)


class TokenServer(LoopbackServer):
    """A token endpoint on 127.0.0.1: answers every request with a token and records the Host header and form."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            fields = dict(line.lower().partition(":")[::2] for line in head.split("\r\n")[1:] if line)
            body = await reader.readexactly(int(fields.get("content-length", "0") or 0))
            self.requests.append((fields.get("host", "").strip(), body.decode()))
            answer = json.dumps({"access_token": "t-1", "token_type": "Bearer", "refresh_token": "r-2"}).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                + f"content-length: {len(answer)}\r\n\r\n".encode()
                + answer
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _provider(token_url: str, rules: DiscoveryRules, discovered: frozenset[str]) -> ResolvedProvider:
    """A provider as `MCPOAuthProviders` builds it from discovery, with a client secret that must stay home."""
    return ResolvedProvider(
        id="mcp_notes",
        display_name="Notes",
        authorization_url="https://auth.example.org/authorize",
        token_url=token_url,
        redirect_uri="https://bot.example.org/api/oauth/mcp_notes/callback",
        client_id="daemon",
        client_secret="client-secret",
        post=pinned_post(rules, "mcp_servers.notes.auth", discovered),
    )


def _tokens(token_url: str) -> OAuthTokens:
    return OAuthTokens(access_token="old", token_url=token_url, refresh_token="r-1", expires_at=0.0, connected_at=0.0)


@pytest.mark.parametrize("later", ["127.0.0.1", "10.0.0.7", "192.168.1.5"])
async def test_oauth_pinning_a_token_endpoint_that_turns_private_after_discovery_is_refused(
    monkeypatch: pytest.MonkeyPatch, later: str
):
    resolver = Rebinding("8.8.8.8", later)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with TokenServer() as server:
        token_url = f"http://{NAME}:{server.port}/token"
        await check_remote_url(token_url, False)  # discovery's check: public
        provider = _provider(token_url, STRICT, frozenset({token_url}))

        with pytest.raises(OAuthError) as exchanged:
            await exchange_code(provider, "the-code", "the-verifier")
        with pytest.raises(OAuthError) as refreshed:
            await refresh_tokens(provider, _tokens(token_url))

    for refused in (exchanged, refreshed):
        text = str(refused.value)
        assert text.startswith("mcp_notes: ") and "mcp_servers.notes.auth" in text
        assert f"the private address {later}" in text and "MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY is off" in text
    assert server.requests == []


async def test_oauth_pinning_the_exchange_connects_to_the_address_it_checked(monkeypatch: pytest.MonkeyPatch):
    # Public when the exchange checks the name, loopback (where the server listens) when asked again.
    resolver = Rebinding("8.8.8.8", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with TokenServer() as server:
        token_url = f"http://{NAME}:{server.port}/token"
        provider = _provider(token_url, STRICT, frozenset({token_url}))

        with pytest.raises(OAuthError, match="the code exchange failed"):
            await exchange_code(provider, "the-code", "the-verifier")

    assert server.requests == []
    assert resolver.asked == 1


async def test_oauth_pinning_allow_private_discovery_still_reaches_a_private_token_endpoint(
    monkeypatch: pytest.MonkeyPatch,
):
    resolver = Rebinding("8.8.8.8", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with TokenServer() as server:
        token_url = f"http://{NAME}:{server.port}/token"
        await check_remote_url(token_url, False)
        provider = _provider(token_url, DiscoveryRules.from_env(RELAXED), frozenset({token_url}))

        tokens = await exchange_code(provider, "the-code", "the-verifier")

    assert tokens.access_token == "t-1"
    [(host, form)] = server.requests
    assert host == f"{NAME}:{server.port}"  # connected to the checked address, under the endpoint's name
    assert "code=the-code" in form and "client_secret=client-secret" in form


async def test_oauth_pinning_an_endpoint_the_operator_wrote_is_not_held_to_the_discovery_rules(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(socket, "getaddrinfo", Rebinding("127.0.0.1"))
    async with TokenServer() as server:
        token_url = f"http://{NAME}:{server.port}/token"
        provider = _provider(token_url, STRICT, frozenset({f"http://{NAME}:{server.port}/token/other"}))

        tokens = await exchange_code(provider, "the-code", "the-verifier")

    assert tokens.access_token == "t-1" and len(server.requests) == 1


async def test_oauth_pinning_a_connection_whose_token_endpoint_rebinds_to_a_metadata_address_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Found by discovery (loopback allowed, as the operator relaxed it), the daemon registered, the person
    approved: at the exchange the name answers a cloud metadata address, which is never reached."""
    # The SDK's authorization server takes a plain-HTTP issuer only named `localhost`: that is the name here.
    resolver = Rebinding("127.0.0.1", name="localhost")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    port = free_port()
    with loopback_mcp_auth_server(issuer=f"http://localhost:{port}", port=port) as server:
        config = notes_config(server.url, authorization_server=f"http://localhost:{port}")
        connections = make_connections(tmp_path, config, RELAXED)
        await connections.prepare("mcp_notes")
        link = connections.connect_link(ALICE, "mcp_notes")
        authorization, secret = connections.authorize("mcp_notes", link.rsplit("=", 1)[1])
        _, code, state = await server.approve(authorization, "alice")
        assert server.provider.clients  # registered through the same checked, pinned requests

        resolver.answers = ["169.254.169.254"]
        resolver.asked = 0
        with pytest.raises(OAuthError) as refused:
            await connections.complete("mcp_notes", state, code, secret)

        assert "169.254.169.254, which is never reached" in str(refused.value)
        assert server.provider.tokens == {} and code in server.provider.codes


async def test_oauth_pinning_discovery_connects_to_the_address_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    resolver = Rebinding("8.8.8.8", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with TokenServer() as server:
        issuer = f"http://{NAME}:{server.port}"
        config = notes_config(f"{issuer}/mcp", authorization_server=issuer)
        connections = make_connections(tmp_path, config, {"MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY": "1"})

        with pytest.raises(OAuthError, match="did not answer"):
            await connections.prepare("mcp_notes")

    assert server.requests == []
