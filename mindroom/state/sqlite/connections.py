"""`ConnectionStore` in SQLite: `<data>/state/connections.db` (0600), every change committed at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mindroom.private_files import open_private_database

__all__ = ["SqliteConnectionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS oauth_connections (
    person TEXT NOT NULL,
    provider TEXT NOT NULL,
    sealed BLOB NOT NULL,
    saved_at REAL NOT NULL,
    PRIMARY KEY (person, provider)
);
"""


class SqliteConnectionStore:
    """`ConnectionStore` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA)

    def get(self, person: str, provider: str) -> bytes | None:
        """The sealed value, None when there is none."""
        with self._lock:
            row = self._db.execute(
                "SELECT sealed FROM oauth_connections WHERE person = ? AND provider = ?", (person, provider)
            ).fetchone()
        return bytes(row[0]) if row else None

    def put(self, person: str, provider: str, sealed: bytes) -> None:
        """Keep the sealed value."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO oauth_connections (person, provider, sealed, saved_at) VALUES (?, ?, ?, ?)",
                (person, provider, sealed, time.time()),
            )

    def delete(self, person: str, provider: str) -> bool:
        """Forget the connection; False when there was none."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM oauth_connections WHERE person = ? AND provider = ?", (person, provider)
            )
        return cursor.rowcount > 0

    def providers(self, person: str) -> list[str]:
        """The person's providers, sorted."""
        with self._lock:
            rows = self._db.execute(
                "SELECT provider FROM oauth_connections WHERE person = ? ORDER BY provider", (person,)
            ).fetchall()
        return [row[0] for row in rows]

    def connected(self) -> list[tuple[str, str]]:
        """Every (person, provider) with a connection, sorted."""
        with self._lock:
            rows = self._db.execute(
                "SELECT person, provider FROM oauth_connections ORDER BY person, provider"
            ).fetchall()
        return [(row[0], row[1]) for row in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
