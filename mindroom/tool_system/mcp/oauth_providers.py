"""The OAuth providers the MCP servers' `auth` blocks make: `mcp_<server id>` (or `auth.provider_id`).

Each is found when first needed (`!connect`, or a tool call): its endpoints from the `auth` block and the
server (`oauth_discovery`), its client from the seed `client_config_services` name (default
`<provider_id>_oauth_client`), else the client the server registered for the daemon earlier (kept sealed in
the state backend, next to the tokens), else a new registration when the server offers one and
`dynamic_client_registration` is on. What was found is kept until the server's entry changes; a failure is
not kept, so the next `!connect` tries again. Nothing here runs for a config without such servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mindroom.config.mcp import MCPServerConfig, mcp_oauth_provider_id
from mindroom.config.oauth import CLIENT_SERVICE_SUFFIX, read_client_seeds
from mindroom.logging_config import get_logger, register_secret_values
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.providers import CALLBACK_PATH, ProviderState, ResolvedProvider, callback_base
from mindroom.oauth.service import OAuthConnections
from mindroom.tool_system.mcp.oauth_discovery import (
    DiscoveredEndpoints,
    DiscoveryRules,
    discover_endpoints,
    pinned_post,
    register_client,
)

__all__ = ["MCPOAuthProviders", "mcp_oauth_servers"]

logger = get_logger(__name__)

_FOUND_ON_CONNECT = "its endpoints are found when someone connects"
"""Why an MCP server's provider is not ready before anyone connected: not a fault."""


def mcp_oauth_servers(servers: Mapping[str, MCPServerConfig]) -> dict[str, tuple[str, MCPServerConfig]]:
    """The enabled servers with `auth`, by their provider id: (server id, entry)."""
    found: dict[str, tuple[str, MCPServerConfig]] = {}
    for server_id, server in servers.items():
        if server.enabled and server.auth is not None:
            found.setdefault(mcp_oauth_provider_id(server_id, server.auth), (server_id, server))
    return found


@dataclass(frozen=True, slots=True)
class _Found:
    fingerprint: str
    provider: ResolvedProvider


def _display_name(server_id: str, server: MCPServerConfig) -> str:
    assert server.auth is not None
    return server.display_name or server.auth.display_name or f"MCP {server_id.replace('_', ' ').title()}"


class MCPOAuthProviders:
    """The `ProviderSource` of the live config's MCP servers with `auth`, for one run's `OAuthConnections`."""

    def __init__(self, connections: OAuthConnections, servers: Callable[[], Mapping[str, MCPServerConfig]]) -> None:
        self._connections = connections
        self._servers = servers
        self._found: dict[str, _Found] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def _redirect(self, provider_id: str) -> str:
        return callback_base(self._connections.env) + CALLBACK_PATH.format(provider=provider_id)

    def _fingerprint(self, server: MCPServerConfig, provider_id: str) -> str:
        return server.model_dump_json() + self._redirect(provider_id)

    def states(self) -> dict[str, ProviderState]:
        """Each MCP provider: found (usable), or what finding it waits for."""
        states: dict[str, ProviderState] = {}
        for provider_id, (server_id, server) in mcp_oauth_servers(self._servers()).items():
            found = self._found.get(provider_id)
            name = _display_name(server_id, server)
            if found is not None and found.fingerprint == self._fingerprint(server, provider_id):
                states[provider_id] = ProviderState(provider_id, name, found.provider)
            else:
                problem = f"mcp_servers.{server_id}.auth: {_FOUND_ON_CONNECT}"
                states[provider_id] = ProviderState(provider_id, name, None, problem, waiting=True)
        return states

    async def prepare(self, provider_id: str) -> None:
        """Find the provider's endpoints and client (once per version of its server's entry)."""
        entry = mcp_oauth_servers(self._servers()).get(provider_id)
        if entry is None:
            return
        server_id, server = entry
        async with self._locks.setdefault(provider_id, asyncio.Lock()):
            fingerprint = self._fingerprint(server, provider_id)
            found = self._found.get(provider_id)
            if found is not None and found.fingerprint == fingerprint:
                return
            provider = await self._resolve(provider_id, server_id, server)
            self._found[provider_id] = _Found(fingerprint, provider)
            logger.info("MCP OAuth provider found", provider=provider_id, server=server_id)

    def _seeded_client(self, provider_id: str, server: MCPServerConfig) -> tuple[str, str | None, str | None] | None:
        assert server.auth is not None
        services = [*server.auth.client_config_services, *server.auth.shared_client_config_services]
        try:
            seeds = read_client_seeds(self._connections.env, self._connections.config_dir)
        except ValueError as error:
            raise OAuthError(str(error)) from None
        for service in services or [f"{provider_id}{CLIENT_SERVICE_SUFFIX}"]:
            seed = seeds.get(service.removesuffix(CLIENT_SERVICE_SUFFIX))
            if seed is not None and seed.client_id:
                return seed.client_id, seed.client_secret, seed.redirect_uri
        return None

    async def _client(
        self, provider_id: str, server_id: str, server: MCPServerConfig, endpoints: DiscoveredEndpoints
    ) -> tuple[str, str | None, str, str]:
        """(client id, secret, auth method, redirect URI): seeded, else registered before, else registered now."""
        auth = server.auth
        assert auth is not None
        seeded = self._seeded_client(provider_id, server)
        if seeded is not None:
            client_id, secret, redirect = seeded
            return client_id, secret, auth.token_endpoint_auth_method, redirect or self._redirect(provider_id)
        redirect = self._redirect(provider_id)
        vault = self._connections.vault
        kept = await asyncio.to_thread(vault.load_client, provider_id)
        if kept and kept.get("redirect_uri") == redirect and kept.get("registration_url") == endpoints.registration_url:
            return kept["client_id"], kept.get("client_secret"), kept.get("auth_method", "none"), redirect
        where = f"mcp_servers.{server_id}.auth"
        if not endpoints.registration_url or not auth.dynamic_client_registration:
            raise OAuthError(
                f"{where}: needs a client: the seed {provider_id}{CLIENT_SERVICE_SUFFIX} (or client_config_services),"
                " or a server offering dynamic client registration"
            )
        rules = DiscoveryRules.from_env(self._connections.env)
        client = await register_client(server_id, server, endpoints.registration_url, redirect, rules)
        register_secret_values([client.client_secret])
        values: dict[str, str | None] = {
            "client_id": client.client_id,
            "client_secret": client.client_secret,
            "auth_method": client.auth_method,
            "redirect_uri": redirect,
            "registration_url": client.registration_url,
        }
        await asyncio.to_thread(vault.save_client, provider_id, values)
        logger.info("MCP OAuth client registered", provider=provider_id, server=server_id)
        return client.client_id, client.client_secret, client.auth_method, redirect

    async def _resolve(self, provider_id: str, server_id: str, server: MCPServerConfig) -> ResolvedProvider:
        auth = server.auth
        assert auth is not None
        rules = DiscoveryRules.from_env(self._connections.env)
        endpoints = await discover_endpoints(server_id, server, rules)
        client_id, secret, method, redirect = await self._client(provider_id, server_id, server, endpoints)
        params = {str(key): str(value) for key, value in auth.extra_auth_params.items()}
        params.setdefault("resource", auth.resource or server.url or "")  # RFC 8707, as the MCP spec asks
        token_params = {str(key): str(value) for key, value in auth.extra_token_params.items()}
        register_secret_values(list(token_params.values()))
        return ResolvedProvider(
            id=provider_id,
            display_name=_display_name(server_id, server),
            authorization_url=endpoints.authorization_url,
            token_url=endpoints.token_url,
            redirect_uri=redirect,
            client_id=client_id,
            client_secret=secret,
            revocation_url=endpoints.revocation_url,
            scopes=tuple(auth.scopes),
            extra_auth_params=MappingProxyType(params),
            auth_method=method,
            extra_token_params=MappingProxyType(token_params),
            post=pinned_post(rules, f"mcp_servers.{server_id}.auth", endpoints.discovered),
        )
