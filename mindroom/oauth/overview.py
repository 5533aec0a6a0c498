"""The operator's view of the connections: each provider with its state, and who is connected to it.

Read by `/api/oauth/providers` and `/api/oauth/{provider}/status` (the dashboard's Connections view). A
connection is told by its person, scopes and times, never by a token. A provider the config no longer names
is listed while someone is still connected to it, so its connections can be seen and forgotten.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mindroom.oauth.errors import OAuthError
from mindroom.oauth.providers import ProviderState
from mindroom.oauth.service import OAuthConnections
from mindroom.oauth.vault import OAuthTokens

__all__ = ["ConnectionInfo", "ProviderOverview", "provider_overview", "providers_overview"]

_GONE = "oauth_providers.{provider}: not in the config or a seed any more (its connections stay until disconnected)"


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """One person's connection: `connected`, `expired` (ended, no refresh token) or `unreadable` (another key)."""

    person: str
    state: str
    scopes: tuple[str, ...] | None = None
    expires_at: float | None = None
    connected_at: float | None = None
    refreshable: bool = False


@dataclass(frozen=True, slots=True)
class ProviderOverview:
    """A provider: whether people can connect to it (else why not), what it asks for, and who is connected."""

    id: str
    display_name: str
    ready: bool
    problem: str | None
    scopes: tuple[str, ...]
    revocable: bool
    connections: tuple[ConnectionInfo, ...]


def _info(person: str, tokens: OAuthTokens | None) -> ConnectionInfo:
    if tokens is None:
        return ConnectionInfo(person, "unreadable")
    ended = tokens.expires_at is not None and tokens.expires_at <= time.time()
    refreshable = bool(tokens.refresh_token)
    return ConnectionInfo(
        person,
        "expired" if ended and not refreshable else "connected",
        tuple(tokens.scope.split()) if tokens.scope is not None else None,
        tokens.expires_at,
        tokens.connected_at,
        refreshable,
    )


def _overview(service: OAuthConnections, state: ProviderState | None, provider_id: str) -> ProviderOverview:
    people = [person for person, provider in service.vault.connected() if provider == provider_id]
    connections = tuple(_info(person, service.vault.load(person, provider_id)) for person in people)
    resolved = state.resolved if state is not None else None
    return ProviderOverview(
        id=provider_id,
        display_name=state.display_name if state is not None else provider_id,
        ready=resolved is not None,
        problem=state.problem if state is not None else _GONE.format(provider=provider_id),
        scopes=resolved.scopes if resolved is not None else (),
        revocable=resolved is not None and resolved.revocation_url is not None,
        connections=connections,
    )


def providers_overview(service: OAuthConnections) -> list[ProviderOverview]:
    """Every provider named by the config or a seed, and every other one someone is connected to, by id.

    Blocking (it reads the store and opens each connection): call it in a thread. `OAuthError` when the
    seeds cannot be read.
    """
    states = service.states()
    named = sorted({*states, *(provider for _, provider in service.vault.connected())})
    return [_overview(service, states.get(provider_id), provider_id) for provider_id in named]


def provider_overview(service: OAuthConnections, provider_id: str) -> ProviderOverview:
    """One provider's overview; `OAuthError` when neither the config, a seed nor a connection names it."""
    states = service.states()
    if provider_id not in states and not any(provider == provider_id for _, provider in service.vault.connected()):
        known = ", ".join(sorted(states)) or "none"
        raise OAuthError(f"unknown OAuth provider {provider_id!r} (named here: {known})")
    return _overview(service, states.get(provider_id), provider_id)
