"""Where a remote MCP server's people sign in: its OAuth endpoints found from the server, and a client registered.

`discover_endpoints` follows the MCP authorization spec: the server's protected-resource metadata (RFC 9728),
named by its 401 answer's `WWW-Authenticate: Bearer resource_metadata=...` or found at its well-known path,
names the authorization server, whose metadata (RFC 8414, else OpenID Connect discovery) gives the endpoints.
Endpoints written in the server's `auth` block win; `authorization_server` skips the resource lookup, and
`discovery: manual` skips discovery. `register_client` registers the daemon at the registration endpoint
(RFC 7591).

Every request goes over HTTPS to a public host, to the addresses its name was checked with (the MCP servers'
own checks, `address` and `http_client`), and a redirect is refused, not followed. The token exchange, refresh
and revocation at an endpoint the metadata named go the same way (`pinned_post`): the name is checked again
at each request and the connection made to the addresses of that check, so a name that answers a public
address for discovery and a loopback or LAN address later never receives a code, token or client secret.
For local development `MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY=1` allows plain HTTP and
`MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY=1` private and loopback addresses (metadata and link-local
addresses stay refused).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from mindroom.config.mcp import MCPServerConfig
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.exchange import post_form
from mindroom.oauth.providers import EndpointPost
from mindroom.tool_system.mcp.address import CheckedHost, check_remote_url
from mindroom.tool_system.spec import ToolError

__all__ = [
    "ALLOW_INSECURE_ENV",
    "ALLOW_PRIVATE_ENV",
    "DiscoveredEndpoints",
    "DiscoveryRules",
    "RegisteredClient",
    "discover_endpoints",
    "pinned_post",
    "register_client",
]

ALLOW_INSECURE_ENV = "MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY"
ALLOW_PRIVATE_ENV = "MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY"
_TIMEOUT_S = 15.0
_MAX_BODY = 256 * 1024
_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]+)"')


@dataclass(frozen=True, slots=True)
class DiscoveryRules:
    """Which discovery addresses are allowed: plain HTTP, private addresses (both off unless the operator says)."""

    allow_insecure: bool = False
    allow_private: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DiscoveryRules:
        """The rules the operator's environment sets."""
        return cls(env.get(ALLOW_INSECURE_ENV, "").strip() == "1", env.get(ALLOW_PRIVATE_ENV, "").strip() == "1")


@dataclass(frozen=True, slots=True)
class DiscoveredEndpoints:
    """A server's OAuth endpoints: where to authorize, exchange, register (if offered) and revoke (if offered)."""

    authorization_url: str
    token_url: str
    registration_url: str | None = None
    revocation_url: str | None = None
    issuer: str | None = None
    discovered: frozenset[str] = frozenset()
    """The endpoint URLs taken from the server's metadata (not written in the `auth` block): held to the rules."""


@dataclass(frozen=True, slots=True)
class RegisteredClient:
    """The client a server registered for the daemon (RFC 7591): its id, secret and how it authenticates."""

    client_id: str
    client_secret: str | None
    auth_method: str
    redirect_uri: str
    registration_url: str


def _check_scheme(url: str, rules: DiscoveryRules, where: str) -> None:
    scheme = urlsplit(url).scheme
    if scheme != "https" and not (scheme == "http" and rules.allow_insecure):
        raise OAuthError(f"{where}: {url} is not HTTPS (set {ALLOW_INSECURE_ENV}=1 for local development)")


async def _check(url: str, rules: DiscoveryRules, where: str) -> CheckedHost:
    """The URL's checked host: HTTPS (unless relaxed) and every address public (unless relaxed); else `OAuthError`."""
    _check_scheme(url, rules, where)
    try:
        return await check_remote_url(url, rules.allow_private, switch=ALLOW_PRIVATE_ENV)
    except ToolError as refused:
        raise OAuthError(f"{where}: {refused}") from None


async def _request(
    url: str, rules: DiscoveryRules, where: str, body: Mapping[str, Any] | None = None
) -> tuple[int, Mapping[str, str], Any]:
    """One request to a discovery or registration URL: its status, headers and JSON body (None if not JSON)."""
    checked = await _check(url, rules, where)
    import httpx2

    from mindroom.tool_system.mcp.http_client import pinned_http_client

    headers = {"Accept": "application/json", "MCP-Protocol-Version": "2025-06-18"}
    try:
        async with pinned_http_client(checked, headers, httpx2.Timeout(_TIMEOUT_S)) as client:
            if body is None:
                response = await client.get(url)
            else:
                response = await client.post(url, json=dict(body))
    except httpx2.HTTPError as error:
        raise OAuthError(f"{where}: {url} did not answer ({type(error).__name__})") from None
    if response.is_redirect:
        raise OAuthError(f"{where}: {url} answered with a redirect, which discovery does not follow")
    content = response.content[:_MAX_BODY]
    try:
        parsed = response.json() if content and len(response.content) <= _MAX_BODY else None
    except ValueError:
        parsed = None
    return response.status_code, response.headers, parsed


async def _json(url: str, rules: DiscoveryRules, where: str) -> dict[str, Any] | None:
    status, _, body = await _request(url, rules, where)
    return body if status == 200 and isinstance(body, dict) else None


def _well_known(url: str, name: str) -> list[str]:
    """The RFC 8414 / RFC 9728 well-known URLs of `url`: the path-inserted one first, then the root one."""
    parts = urlsplit(url)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    found = [f"{origin}/.well-known/{name}{path}"] if path else []
    return [*found, f"{origin}/.well-known/{name}"]


async def _authorization_server(resource: str, rules: DiscoveryRules, where: str) -> str:
    """The authorization server the resource's metadata names (RFC 9728)."""
    status, headers, _ = await _request(resource, rules, where)
    candidates = _well_known(resource, "oauth-protected-resource")
    if status == 401:
        named = _RESOURCE_METADATA.search(headers.get("www-authenticate", ""))
        if named:
            candidates.insert(0, named.group(1))
    for candidate in candidates:
        metadata = await _json(candidate, rules, where)
        servers = metadata.get("authorization_servers") if metadata else None
        if isinstance(servers, list) and servers and isinstance(servers[0], str):
            return servers[0]
    raise OAuthError(f"{where}: {resource} publishes no protected-resource metadata naming its authorization server")


async def _server_metadata(issuer: str, rules: DiscoveryRules, where: str) -> dict[str, Any]:
    candidates = _well_known(issuer, "oauth-authorization-server") + _well_known(issuer, "openid-configuration")
    candidates.append(issuer.rstrip("/") + "/.well-known/openid-configuration")
    for candidate in dict.fromkeys(candidates):
        metadata = await _json(candidate, rules, where)
        if metadata and metadata.get("authorization_endpoint") and metadata.get("token_endpoint"):
            return metadata
    raise OAuthError(f"{where}: the authorization server {issuer} publishes no OAuth metadata")


async def discover_endpoints(server_id: str, server: MCPServerConfig, rules: DiscoveryRules) -> DiscoveredEndpoints:
    """The server's OAuth endpoints: the `auth` block's, completed by discovery; `OAuthError` naming the key."""
    auth = server.auth
    assert auth is not None
    where = f"mcp_servers.{server_id}.auth"
    explicit = DiscoveredEndpoints(
        authorization_url=auth.authorization_url or "",
        token_url=auth.token_url or "",
        registration_url=auth.registration_url,
        issuer=auth.authorization_server,
    )
    if auth.discovery == "manual" or (explicit.authorization_url and explicit.token_url and explicit.registration_url):
        return explicit
    issuer = auth.authorization_server or await _authorization_server(auth.resource or server.url or "", rules, where)
    metadata = await _server_metadata(issuer, rules, where)
    registration = metadata.get("registration_endpoint")
    revocation = metadata.get("revocation_endpoint")
    found = DiscoveredEndpoints(
        authorization_url=explicit.authorization_url or str(metadata["authorization_endpoint"]),
        token_url=explicit.token_url or str(metadata["token_endpoint"]),
        registration_url=explicit.registration_url or (str(registration) if registration else None),
        revocation_url=str(revocation) if revocation else None,
        issuer=issuer,
    )
    # What the server's metadata names gets the codes, tokens and secrets: held to the same rules as discovery
    # (the person's browser opens the authorization page, so only its scheme is checked).
    if not explicit.authorization_url:
        _check_scheme(found.authorization_url, rules, where)
    discovered = [found.token_url if not explicit.token_url else None, found.revocation_url]
    discovered.append(found.registration_url if not explicit.registration_url else None)
    for url in discovered:
        if url:
            await _check(url, rules, where)
    return replace(found, discovered=frozenset(url for url in discovered if url))


def pinned_post(rules: DiscoveryRules, where: str, discovered: frozenset[str]) -> EndpointPost:
    """An `EndpointPost` that checks a discovered endpoint's name at each request and connects to the addresses
    of that check only; an endpoint the operator wrote goes by the plain client."""

    async def post(url: str, form: Mapping[str, str], headers: Mapping[str, str]) -> tuple[int, bytes]:
        if url not in discovered:
            return await post_form(url, form, headers)
        try:
            checked = await _check(url, rules, where)
        except OAuthError as refused:
            raise ConnectionError(str(refused)) from None
        import httpx2

        from mindroom.tool_system.mcp.http_client import pinned_http_client

        try:
            async with pinned_http_client(checked, dict(headers), httpx2.Timeout(_TIMEOUT_S)) as client:
                response = await client.post(url, data=dict(form))
        except httpx2.HTTPError as error:
            raise ConnectionError(type(error).__name__) from None
        return response.status_code, response.content

    return post


async def register_client(
    server_id: str, server: MCPServerConfig, registration_url: str, redirect_uri: str, rules: DiscoveryRules
) -> RegisteredClient:
    """Register the daemon as a client at the server's registration endpoint (RFC 7591)."""
    auth = server.auth
    assert auth is not None
    where = f"mcp_servers.{server_id}.auth"
    request: dict[str, Any] = {
        "client_name": "MindRoom",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": auth.token_endpoint_auth_method,
    }
    if auth.scopes:
        request["scope"] = " ".join(auth.scopes)
    status, _, body = await _request(registration_url, rules, where, request)
    if status not in (200, 201) or not isinstance(body, dict) or not body.get("client_id"):
        code = body.get("error") if isinstance(body, dict) else None
        raise OAuthError(f"{where}: the client registration was refused (HTTP {status}, {code or 'no client_id'})")
    secret = body.get("client_secret")
    return RegisteredClient(
        client_id=str(body["client_id"]),
        client_secret=str(secret) if secret else None,
        auth_method=str(body.get("token_endpoint_auth_method") or auth.token_endpoint_auth_method),
        redirect_uri=redirect_uri,
        registration_url=registration_url,
    )
