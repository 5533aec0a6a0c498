"""Sync tokens and snapshots in PostgreSQL: tokens read into memory under the lock, both written in order."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from mindroom.state.postgres.connection import StateConnection
from mindroom.state.snapshots import check_snapshot_name

__all__ = ["PostgresSnapshots", "PostgresSyncTokens", "read_snapshot"]


class PostgresSyncTokens:
    """The last fully handled sync token per bot, in `mindroom.sync_tokens`."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}

    def load_all(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read every bot's position."""
        rows = conn.execute("SELECT bot, token FROM mindroom.sync_tokens").fetchall()
        with self._lock:
            self._tokens.update(dict(rows))

    def load(self, bot_name: str) -> str | None:
        """The stored token, or None."""
        with self._lock:
            return self._tokens.get(bot_name)

    def save(self, bot_name: str, token: str) -> None:
        """Keep `token` as the bot's position."""
        with self._lock:
            self._tokens[bot_name] = token
        self._conn.write(
            "INSERT INTO mindroom.sync_tokens (bot, token, saved_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (bot) DO UPDATE SET token = EXCLUDED.token, saved_at = EXCLUDED.saved_at",
            (bot_name, token, time.time()),
        )

    def clear(self, bot_name: str) -> None:
        """Forget the bot's position."""
        with self._lock:
            self._tokens.pop(bot_name, None)
        self._conn.write("DELETE FROM mindroom.sync_tokens WHERE bot = %s", (bot_name,))


def read_snapshot(conn: psycopg.Connection[Any], name: str) -> str | None:
    """The snapshot `name` as last written, or None (also before any daemon created the tables)."""
    try:
        row = conn.execute(
            "SELECT body FROM mindroom.snapshots WHERE name = %s", (check_snapshot_name(name),)
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        return None
    return str(row[0]) if row else None


class PostgresSnapshots:
    """Named snapshots in `mindroom.snapshots`, so `mindroom hooks list` finds them from any machine."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection

    def write(self, name: str, text: str) -> None:
        """Replace the snapshot (queued; applied in order with the other writes)."""
        self._conn.write(
            "INSERT INTO mindroom.snapshots (name, body, written_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, written_at = EXCLUDED.written_at",
            (check_snapshot_name(name), text, time.time()),
        )

    def read(self, name: str) -> str | None:
        """The snapshot as the database has it (waits for the writes queued before)."""
        return self._conn.call(lambda conn: read_snapshot(conn, name))
