"""Pending authorizations: the connect link, then the state the provider hands back, each used once.

`!connect` makes a link ticket for the person and provider. The first browser to open the link gets a
random secret in a cookie and is sent to the provider with a fresh `state` and a PKCE (S256) challenge; the
callback finishes only with that `state` and that browser's cookie, within `FLOW_TTL_S` of the `!connect`.
Any callback for a `state` uses it up, so a stolen or replayed `state` never completes a connection, and the
tokens always land with the person who asked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field, replace

from mindroom.oauth.errors import OAuthFlowError

__all__ = ["FLOW_TTL_S", "MAX_PENDING", "OpenedFlow", "PendingFlow", "PendingFlows", "pkce_challenge"]

FLOW_TTL_S = 600.0
MAX_PENDING = 1000
"""Pending flows kept at most (the oldest go first): `!connect` cannot grow memory without bound."""


def pkce_challenge(verifier: str) -> str:
    """The S256 code challenge of a PKCE verifier (RFC 7636)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class PendingFlow:
    """One authorization in progress: who asked, for which provider, until when, and its secrets."""

    person: str
    provider: str
    expires_at: float
    verifier: str = field(repr=False)
    state: str | None = field(default=None, repr=False)
    browser_digest: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class OpenedFlow:
    """A link opened by a browser: the state and challenge for the provider, the secret for the browser's cookie."""

    state: str = field(repr=False)
    challenge: str
    browser_secret: str = field(repr=False)
    provider: str


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


class PendingFlows:
    """The pending authorizations of one daemon (in memory: a restart asks people for a new `!connect`)."""

    def __init__(self, ttl_s: float = FLOW_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._by_ticket: dict[str, PendingFlow] = {}
        self._by_state: dict[str, PendingFlow] = {}

    def _prune(self, now: float) -> None:
        for table in (self._by_ticket, self._by_state):
            for key in [key for key, flow in table.items() if flow.expires_at <= now]:
                del table[key]
            while len(table) >= MAX_PENDING:
                del table[next(iter(table))]

    def start(self, person: str, provider: str) -> str:
        """A new link ticket for `person` connecting `provider`."""
        ticket = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            self._prune(now)
            self._by_ticket[ticket] = PendingFlow(person, provider, now + self.ttl_s, secrets.token_urlsafe(48))
        return ticket

    def open(self, ticket: str, provider: str) -> OpenedFlow:
        """The first opening of a link: its state, challenge and browser secret (`OAuthFlowError` after that)."""
        with self._lock:
            flow = self._by_ticket.pop(ticket, None)
            if flow is None or flow.expires_at <= time.time() or flow.provider != provider:
                raise OAuthFlowError("this connect link is unknown, used or expired: send !connect again")
            state, secret = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
            self._by_state[state] = replace(flow, state=state, browser_digest=_digest(secret))
        return OpenedFlow(state, pkce_challenge(flow.verifier), secret, provider)

    def take(self, state: str, browser_secret: str | None, provider: str) -> PendingFlow:
        """The flow of a callback's `state`, used up whatever happens; `OAuthFlowError` unless it is this
        browser's, for this provider, and in time."""
        with self._lock:
            flow = self._by_state.pop(state, None)
        if flow is None:
            raise OAuthFlowError("this sign-in is unknown or was already used: send !connect again")
        if flow.expires_at <= time.time():
            raise OAuthFlowError("this sign-in expired: send !connect again")
        if flow.provider != provider:
            raise OAuthFlowError("this sign-in is for another provider: send !connect again")
        presented = _digest(browser_secret) if browser_secret else b""
        if flow.browser_digest is None or not hmac.compare_digest(presented, flow.browser_digest):
            raise OAuthFlowError("this sign-in was started in another browser: send !connect again")
        return flow
