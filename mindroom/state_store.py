"""The daemon's own durable state in SQLite: which events each entity has handled (dedup across restarts)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

__all__ = ["HandledEvents"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS handled_events (
    entity TEXT NOT NULL,
    event_id TEXT NOT NULL,
    handled_at REAL NOT NULL,
    PRIMARY KEY (entity, event_id)
);
CREATE INDEX IF NOT EXISTS handled_events_at ON handled_events (handled_at);
"""
_RETENTION_S = 30 * 24 * 3600


class HandledEvents:
    """Persistent record of (entity, event id) pairs; `claim` succeeds once per pair, ever."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        os.chmod(path, 0o600)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.execute("DELETE FROM handled_events WHERE handled_at < ?", (time.time() - _RETENTION_S,))

    def claim(self, entity: str, event_id: str) -> bool:
        """Record that `entity` handles `event_id`; False if it already did (now or before a restart)."""
        with self._lock:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO handled_events (entity, event_id, handled_at) VALUES (?, ?, ?)",
                (entity, event_id, time.time()),
            )
            return cursor.rowcount == 1

    def seen(self, entity: str, event_id: str) -> bool:
        """True if `entity` already claimed `event_id`."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM handled_events WHERE entity = ? AND event_id = ?", (entity, event_id)
            ).fetchone()
            return row is not None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
