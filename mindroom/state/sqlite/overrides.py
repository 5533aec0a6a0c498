"""`OverrideStore` in SQLite: `<data>/state/overrides.db`, every change committed at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from mindroom.config.overrides import Override
from mindroom.private_files import open_private_database

__all__ = ["SqliteOverrideStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS overrides (
    scope TEXT NOT NULL,
    room_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    set_by TEXT NOT NULL,
    set_at REAL NOT NULL,
    PRIMARY KEY (scope, room_id, thread_id, key)
);
"""


class SqliteOverrideStore:
    """`OverrideStore` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA)

    def all(self) -> list[Override]:
        """Every override, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT scope, key, value, set_by, set_at, room_id, thread_id FROM overrides ORDER BY set_at"
            ).fetchall()
        return [
            Override(scope, key, json.loads(value), by, at, room, thread)
            for scope, key, value, by, at, room, thread in rows
        ]

    def put(self, override: Override) -> None:
        """Keep `override` (it replaces the one of its slot, if any)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO overrides (scope, room_id, thread_id, key, value, set_by, set_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*override.slot, json.dumps(override.value), override.set_by, override.set_at),
            )

    def remove(self, slot: tuple[str, str, str, str]) -> bool:
        """Drop the override of `slot`; False when there was none."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM overrides WHERE scope = ? AND room_id = ? AND thread_id = ? AND key = ?", slot
            )
        return cursor.rowcount > 0

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
