"""People's OAuth connections: one sealed value per (person, provider), opaque to the state.

The OAuth layer seals each value before it gets here (`mindroom.oauth.vault`), so neither the SQLite file
(`sqlite.connections.SqliteConnectionStore`, `<data>/state/connections.db`, mode 0600) nor the PostgreSQL
table (`postgres.connections.PostgresConnectionStore`, `mindroom.oauth_connections`) holds a token in clear.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ConnectionStore"]


class ConnectionStore(Protocol):
    """Sealed connection values by (person, provider)."""

    def get(self, person: str, provider: str) -> bytes | None:
        """The sealed value, None when the person has no connection to the provider."""

    def put(self, person: str, provider: str, sealed: bytes) -> None:
        """Keep the sealed value (replacing the one there)."""

    def delete(self, person: str, provider: str) -> bool:
        """Forget the connection; False when there was none."""

    def providers(self, person: str) -> list[str]:
        """The providers the person has a connection to, sorted."""

    def connected(self) -> list[tuple[str, str]]:
        """Every (person, provider) with a connection, sorted."""

    def close(self) -> None:
        """Release what the store holds of its own."""
