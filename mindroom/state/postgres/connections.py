"""OAuth connections in PostgreSQL: read into memory under the lock, every change written through `StateConnection`."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresConnectionStore"]


class PostgresConnectionStore:
    """`ConnectionStore` on PostgreSQL (`mindroom.oauth_connections`)."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], bytes] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read every connection."""
        rows = conn.execute("SELECT person, provider, sealed FROM mindroom.oauth_connections").fetchall()
        with self._lock:
            self._values = {(person, provider): bytes(sealed) for person, provider, sealed in rows}

    def get(self, person: str, provider: str) -> bytes | None:
        """The sealed value, None when there is none."""
        with self._lock:
            return self._values.get((person, provider))

    def put(self, person: str, provider: str, sealed: bytes) -> None:
        """Keep the sealed value."""
        with self._lock:
            self._values[(person, provider)] = sealed
        self._conn.write(
            "INSERT INTO mindroom.oauth_connections (person, provider, sealed, saved_at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (person, provider) DO UPDATE SET sealed = EXCLUDED.sealed, saved_at = EXCLUDED.saved_at",
            (person, provider, sealed, time.time()),
        )

    def delete(self, person: str, provider: str) -> bool:
        """Forget the connection; False when there was none."""
        with self._lock:
            found = self._values.pop((person, provider), None)
        self._conn.write(
            "DELETE FROM mindroom.oauth_connections WHERE person = %s AND provider = %s", (person, provider)
        )
        return found is not None

    def providers(self, person: str) -> list[str]:
        """The person's providers, sorted."""
        with self._lock:
            return sorted(provider for who, provider in self._values if who == person)

    def connected(self) -> list[tuple[str, str]]:
        """Every (person, provider) with a connection, sorted."""
        with self._lock:
            return sorted(self._values)

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
