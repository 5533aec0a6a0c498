"""A real MCP server with OAuth on loopback, built from the MCP SDK's own auth support.

The SDK's `MCPServer` with its authorization-server routes (RFC 8414 metadata, RFC 7591 registration,
authorize, token with PKCE, revocation), its protected-resource metadata (RFC 9728) and its bearer
middleware (401 with `WWW-Authenticate: Bearer resource_metadata=...`). The provider behind the routes is
the small in-memory one the SDK's protocol asks for; the person approving is chosen on a consent page,
which the test opens as the person's browser (`approve`). The tool `whoami` answers with the person whose
token made the call. Served by uvicorn in a thread.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

__all__ = ["LoopbackMCPAuthServer", "free_port", "loopback_mcp_auth_server"]


@dataclass
class _Pending:
    client_id: str
    params: AuthorizationParams


@dataclass
class _Provider:
    """The SDK's `OAuthAuthorizationServerProvider`, in memory: clients, codes, tokens and who they are for."""

    base: str
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    pending: dict[str, _Pending] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    tokens: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        ticket = secrets.token_urlsafe(16)
        self.pending[ticket] = _Pending(client.client_id, params)
        return f"{self.base}/consent?{urlencode({'pending': ticket})}"

    def consent(self, ticket: str, user: str) -> str:
        pending = self.pending.pop(ticket)
        code = secrets.token_urlsafe(24)
        params = pending.params
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=pending.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], subject: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600, subject=subject
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, subject=subject)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.subject)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)


@dataclass
class LoopbackMCPAuthServer:
    """The running server: its MCP URL, its provider (clients registered, tokens issued) and the calls it served."""

    base: str
    provider: _Provider
    calls: list[tuple[str, str | None]]

    @property
    def url(self) -> str:
        """The MCP endpoint (streamable HTTP)."""
        return f"{self.base}/mcp"

    async def approve(self, authorization_url: str, user: str) -> tuple[str, str, str]:
        """Open the authorization URL as `user`'s browser and approve: the callback URL, its code and state."""
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            first = await browser.get(authorization_url)
            assert first.status_code == 302, first.text
            consent = first.headers["location"]
            answer = await browser.get(f"{consent}&{urlencode({'user': user})}")
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        query = parse_qs(urlsplit(location).query)
        return location, query["code"][0], query["state"][0]


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def loopback_mcp_auth_server(issuer: str | None = None, port: int | None = None) -> Iterator[LoopbackMCPAuthServer]:
    """Start the server on a free loopback port (or `port`) for the block (`issuer`: the address its metadata names
    instead of its own, so its endpoints point there)."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    provider = _Provider(base)
    calls: list[tuple[str, str | None]] = []
    settings = AuthSettings(
        issuer_url=issuer or base,  # type: ignore[arg-type]
        resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["notes"]),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=[],
    )
    server: MCPServer[Any] = MCPServer("notes", auth_server_provider=provider, auth=settings)

    @server.tool()
    def whoami() -> str:
        """The person whose token made this call."""
        token = get_access_token()
        subject = token.subject if token is not None else None
        calls.append(("whoami", subject))
        return f"you are {subject}"

    @server.custom_route("/consent", methods=["GET"])
    async def consent(request: Request) -> Response:
        ticket, user = request.query_params.get("pending", ""), request.query_params.get("user", "")
        if ticket not in provider.pending or not user:
            return Response("unknown request", status_code=400)
        return RedirectResponse(provider.consent(ticket, user), status_code=302)

    @server.custom_route("/moved", methods=["GET", "POST"])
    async def moved(request: Request) -> Response:
        return RedirectResponse(f"{base}/mcp", status_code=307)

    app = server.streamable_http_app(host="127.0.0.1")
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(uv.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the MCP OAuth server did not start")
        time.sleep(0.05)
    try:
        yield LoopbackMCPAuthServer(base, provider, calls)
    finally:
        uv.should_exit = True
        thread.join(10)
