"""`OAuthConnections`: connect, use, list and disconnect a person's accounts, for commands, routes and tools.

One per run of the daemon, offered for its data directory (`provide_connections`) so the HTTP app and the
tools of its turns find it (`connections_for`). Providers are read from the live config each time one is
asked for, so a reload that adds one needs no restart. Providers whose endpoints are found over the network
(an MCP server's `auth`) come from a `ProviderSource`: `prepare` finds them before a link or token is made.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from mindroom.config.oauth import OAuthProviderConfig
from mindroom.logging_config import get_logger
from mindroom.oauth.errors import OAuthConnectionRequiredError, OAuthError
from mindroom.oauth.exchange import exchange_code, refresh_tokens, revoke_tokens
from mindroom.oauth.flow import PendingFlows
from mindroom.oauth.providers import ProviderState, ResolvedProvider, callback_base, provider_states, split_states
from mindroom.oauth.vault import TokenVault

__all__ = [
    "AUTHORIZE_PATH",
    "REFRESH_MARGIN_S",
    "Disconnection",
    "OAuthConnections",
    "ProviderSource",
    "connections_for",
    "provide_connections",
]

logger = get_logger(__name__)

REFRESH_MARGIN_S = 60.0
"""An access token ending sooner than this is refreshed before it is handed out."""
AUTHORIZE_PATH = "/api/oauth/{provider}/authorize"


@dataclass(frozen=True, slots=True)
class Disconnection:
    """What a disconnect did: whether there was a connection, whether the provider revoked it, and why not."""

    person: str
    provider: str
    found: bool
    revoked: bool = False
    problem: str | None = None


class ProviderSource(Protocol):
    """Providers the config implies (an MCP server's `auth`), whose endpoints are found when first needed."""

    def states(self) -> Mapping[str, ProviderState]:
        """The source's providers as they stand now (found, or why not yet)."""

    async def prepare(self, provider_id: str) -> None:
        """Find the provider's endpoints and client, when the source has it and has not yet (`OAuthError`)."""


class OAuthConnections:
    """People's connections to the OAuth providers of the live config."""

    def __init__(
        self,
        vault: TokenVault,
        entries: Callable[[], Mapping[str, OAuthProviderConfig]],
        env: Mapping[str, str],
        config_dir: Path,
        flows: PendingFlows | None = None,
    ) -> None:
        self.vault = vault
        self.flows = flows or PendingFlows()
        self._entries = entries
        self._env = env
        self._config_dir = config_dir
        self._refreshing: dict[tuple[str, str], asyncio.Lock] = {}
        self.sources: list[ProviderSource] = []
        """Where providers beyond `oauth_providers` come from (the MCP servers' `auth`)."""
        self.on_disconnect: list[Callable[[str, str], Awaitable[None]]] = []
        """Told (person, provider) after a connection is forgotten (an MCP server closes that person's session)."""

    @property
    def env(self) -> Mapping[str, str]:
        """The environment the providers are resolved with."""
        return self._env

    @property
    def config_dir(self) -> Path:
        """The config's folder (seed files are relative to it)."""
        return self._config_dir

    def states(self) -> dict[str, ProviderState]:
        """Every provider the live config or a seed names, usable or not (and why not)."""
        states = provider_states(self._entries(), self._env, self._config_dir)
        for source in self.sources:
            states.update(source.states())
        return dict(sorted(states.items()))

    def providers(self) -> tuple[dict[str, ResolvedProvider], list[str]]:
        """The usable providers of the live config, and why the others are not."""
        return split_states(self.states().values())

    async def prepare(self, provider_id: str) -> None:
        """Find a provider's endpoints and client when a source has them to find (`OAuthError` when that fails)."""
        for source in self.sources:
            await source.prepare(provider_id)

    def provider(self, provider_id: str) -> ResolvedProvider:
        """The usable provider of this id; `OAuthError` saying why not (unknown, or not set up)."""
        states = self.states()
        state = states.get(provider_id)
        if state is not None and state.resolved is not None:
            return state.resolved
        if state is not None:
            raise OAuthError(f"{provider_id} is not set up: {state.problem}")
        known = ", ".join(sorted(found.id for found in states.values() if found.resolved is not None)) or "none"
        raise OAuthError(f"unknown OAuth provider {provider_id!r} (set up here: {known})")

    def connect_link(self, person: str, provider_id: str) -> str:
        """A link for `person` to connect their account at the provider (one use, `FLOW_TTL_S`)."""
        provider = self.provider(provider_id)
        ticket = self.flows.start(person, provider.id)
        path = AUTHORIZE_PATH.format(provider=provider.id)
        return f"{callback_base(self._env)}{path}?{urlencode({'link': ticket})}"

    def authorize(self, provider_id: str, ticket: str) -> tuple[str, str]:
        """Where a browser opening a connect link goes (the provider's page), and the secret for its cookie."""
        provider = self.provider(provider_id)
        opened = self.flows.open(ticket, provider.id)
        params = {
            "response_type": "code",
            "client_id": provider.client_id,
            "redirect_uri": provider.redirect_uri,
            "state": opened.state,
            "code_challenge": opened.challenge,
            "code_challenge_method": "S256",
            **({"scope": " ".join(provider.scopes)} if provider.scopes else {}),
            **provider.extra_auth_params,
        }
        separator = "&" if "?" in provider.authorization_url else "?"
        return f"{provider.authorization_url}{separator}{urlencode(params)}", opened.browser_secret

    async def complete(self, provider_id: str, state: str, code: str, browser_secret: str | None) -> str:
        """Finish a callback: check its state, exchange the code, keep the tokens; the person it connected."""
        provider = self.provider(provider_id)
        flow = self.flows.take(state, browser_secret, provider.id)
        tokens = await exchange_code(provider, code, flow.verifier)
        await asyncio.to_thread(self.vault.save, flow.person, provider.id, tokens)
        logger.info("OAuth account connected", requester=flow.person, provider=provider.id)
        return flow.person

    def _lock(self, person: str, provider: str) -> asyncio.Lock:
        return self._refreshing.setdefault((person, provider), asyncio.Lock())

    async def token_for(self, person: str, provider_id: str) -> str:
        """A fresh access token of `person` at the provider (refreshed when it ends within `REFRESH_MARGIN_S`).

        `OAuthConnectionRequiredError` (carrying a connect link) when there is no usable connection.
        """
        await self.prepare(provider_id)
        provider = self.provider(provider_id)
        async with self._lock(person, provider.id):
            tokens = await asyncio.to_thread(self.vault.load, person, provider.id)
            if tokens is None:
                raise OAuthConnectionRequiredError(provider.id, self.connect_link(person, provider.id))
            if tokens.expires_within(REFRESH_MARGIN_S):
                try:
                    tokens = await refresh_tokens(provider, tokens)
                except OAuthError as error:
                    logger.warning("OAuth refresh failed", requester=person, provider=provider.id, error=str(error))
                    await asyncio.to_thread(self.vault.forget, person, provider.id)
                    raise OAuthConnectionRequiredError(provider.id, self.connect_link(person, provider.id)) from None
                await asyncio.to_thread(self.vault.save, person, provider.id, tokens)
                logger.info("OAuth token refreshed", requester=person, provider=provider.id)
            return tokens.access_token

    async def revoke_and_forget(self, person: str, provider_id: str) -> Disconnection:
        """Revoke the person's tokens at the provider (when it has an RFC 7009 endpoint) and forget them.

        The connection is forgotten even when the provider cannot revoke it (then `problem` says why), or when
        its tokens no longer open.
        """
        tokens = await asyncio.to_thread(self.vault.load, person, provider_id)
        revoked, problem = False, None
        if tokens is not None:
            try:
                await self.prepare(provider_id)
                revoked = await revoke_tokens(self.provider(provider_id), tokens)
            except OAuthError as error:
                problem = str(error)
        forgotten = await asyncio.to_thread(self.vault.forget, person, provider_id)
        for listener in self.on_disconnect:
            await listener(person, provider_id)
        if not forgotten:
            return Disconnection(person, provider_id, found=False)
        logger.info("OAuth account disconnected", requester=person, provider=provider_id, revoked=revoked)
        return Disconnection(person, provider_id, True, revoked, problem)

    async def disconnect(self, person: str, provider_id: str) -> str:
        """`revoke_and_forget`, told as the person reads it in chat."""
        done = await self.revoke_and_forget(person, provider_id)
        if not done.found:
            return f"You have no {provider_id} connection."
        if done.problem:
            return f"Disconnected {provider_id} here, but the provider did not revoke it: {done.problem}."
        return f"Disconnected {provider_id}" + (" and revoked its tokens." if done.revoked else ".")

    def connections(self, person: str) -> list[str]:
        """The providers the person is connected to."""
        return self.vault.providers(person)


_lock = threading.Lock()
_provided: dict[Path, OAuthConnections] = {}


def provide_connections(storage_root: Path, service: OAuthConnections) -> Callable[[], None]:
    """Offer `service` to the routes and tools of the run on `storage_root`; returns how to withdraw it."""
    key = Path(storage_root).resolve()
    with _lock:
        _provided[key] = service

    def withdraw() -> None:
        with _lock:
            if _provided.get(key) is service:
                del _provided[key]

    return withdraw


def connections_for(storage_root: Path) -> OAuthConnections | None:
    """The connections of the run on `storage_root`, None when none runs there."""
    with _lock:
        return _provided.get(Path(storage_root).resolve())
