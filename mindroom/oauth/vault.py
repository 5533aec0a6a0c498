"""`TokenVault`: a person's tokens per provider, sealed before they reach the state backend.

Sealed with the daemon's recovery key (`mindroom.matrix.crypto.sealing.Sealer`, AES-256-GCM) and bound to
their place (person and provider), so the file or row never holds a token in clear, and a value copied to
another person's row does not open.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from mindroom.logging_config import register_secret_values
from mindroom.matrix.crypto.sealing import Sealer, SealError
from mindroom.state.connections import ConnectionStore

__all__ = ["CLIENT_HOLDER", "OAuthTokens", "TokenVault"]

_PLACE = "@oauth"  # never a bot's name: a connection's seal cannot open as a bot's crypto item
CLIENT_HOLDER = "!registered-clients"
"""The row holder of clients a provider registered for the daemon: never a Matrix user id, so never a person."""


@dataclass(frozen=True, slots=True)
class OAuthTokens:
    """What a provider gave for one person: the tokens (hidden from `repr`), when they end, where they refresh."""

    access_token: str = field(repr=False)
    token_url: str
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    scope: str | None = None
    connected_at: float = field(default_factory=time.time)

    def expires_within(self, seconds: float) -> bool:
        """True when the access token ends within `seconds` (never for one without an end)."""
        return self.expires_at is not None and self.expires_at - time.time() <= seconds


class TokenVault:
    """Seals and opens each person's tokens in a `ConnectionStore`.

    `sealer` is a `Sealer`, or what makes one when a connection is first kept or read (reading the recovery key
    then, not at start: a daemon nobody connects through never touches it).
    """

    def __init__(self, store: ConnectionStore, sealer: Sealer | Callable[[], Sealer]) -> None:
        self._store = store
        self._make = sealer
        self._made: Sealer | None = sealer if isinstance(sealer, Sealer) else None
        self._lock = threading.Lock()

    @property
    def _sealer(self) -> Sealer:
        with self._lock:
            if self._made is None:
                assert not isinstance(self._make, Sealer)
                self._made = self._make()
            return self._made

    def load(self, person: str, provider: str) -> OAuthTokens | None:
        """The person's tokens for the provider; None when there are none, or they no longer open."""
        sealed = self._store.get(person, provider)
        if sealed is None:
            return None
        try:
            tokens = OAuthTokens(**json.loads(self._sealer.unseal(_PLACE, provider, person, sealed)))
        except (SealError, ValueError, TypeError):
            return None
        register_secret_values([tokens.access_token, tokens.refresh_token])
        return tokens

    def save(self, person: str, provider: str, tokens: OAuthTokens) -> None:
        """Keep the tokens, sealed."""
        register_secret_values([tokens.access_token, tokens.refresh_token])
        value = json.dumps(asdict(tokens)).encode()
        self._store.put(person, provider, self._sealer.seal(_PLACE, provider, person, value))

    def load_client(self, provider: str) -> dict[str, str] | None:
        """The client the provider registered for the daemon (RFC 7591), None when there is none or it does not open."""
        sealed = self._store.get(CLIENT_HOLDER, provider)
        if sealed is None:
            return None
        try:
            values = json.loads(self._sealer.unseal(_PLACE, provider, CLIENT_HOLDER, sealed))
        except (SealError, ValueError, TypeError):
            return None
        if not isinstance(values, dict):
            return None
        register_secret_values([values.get("client_secret")])
        return {str(key): str(value) for key, value in values.items() if value is not None}

    def save_client(self, provider: str, values: dict[str, str | None]) -> None:
        """Keep a client the provider registered for the daemon, sealed as tokens are."""
        register_secret_values([values.get("client_secret")])
        value = json.dumps(values).encode()
        self._store.put(CLIENT_HOLDER, provider, self._sealer.seal(_PLACE, provider, CLIENT_HOLDER, value))

    def forget(self, person: str, provider: str) -> bool:
        """Drop the person's tokens for the provider; False when there were none."""
        return self._store.delete(person, provider)

    def providers(self, person: str) -> list[str]:
        """The providers the person has tokens for."""
        return self._store.providers(person)

    def connected(self) -> list[tuple[str, str]]:
        """Every (person, provider) with tokens kept, sorted (registered clients are nobody's connection)."""
        return [pair for pair in self._store.connected() if pair[0] != CLIENT_HOLDER]
