"""Overrides in PostgreSQL: read into memory under the lock, every change written through `StateConnection`."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg

from mindroom.config.overrides import Override
from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresOverrideStore"]


class PostgresOverrideStore:
    """`OverrideStore` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._overrides: dict[tuple[str, str, str, str], Override] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read every override."""
        rows = conn.execute(
            "SELECT scope, key, value, set_by, set_at, room_id, thread_id FROM mindroom.overrides ORDER BY set_at"
        ).fetchall()
        with self._lock:
            for scope, key, value, by, at, room, thread in rows:
                override = Override(scope, key, json.loads(value), by, at, room, thread)
                self._overrides[override.slot] = override

    def all(self) -> list[Override]:
        """Every override, oldest first."""
        with self._lock:
            return sorted(self._overrides.values(), key=lambda override: override.set_at)

    def put(self, override: Override) -> None:
        """Keep `override` (it replaces the one of its slot, if any)."""
        with self._lock:
            self._overrides[override.slot] = override
        self._conn.write(
            "INSERT INTO mindroom.overrides (scope, room_id, thread_id, key, value, set_by, set_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (scope, room_id, thread_id, key) DO UPDATE SET"
            " value = EXCLUDED.value, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at",
            (*override.slot, json.dumps(override.value), override.set_by, override.set_at),
        )

    def remove(self, slot: tuple[str, str, str, str]) -> bool:
        """Drop the override of `slot`; False when there was none."""
        with self._lock:
            found = self._overrides.pop(slot, None)
        self._conn.write(
            "DELETE FROM mindroom.overrides WHERE scope = %s AND room_id = %s AND thread_id = %s AND key = %s", slot
        )
        return found is not None

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
