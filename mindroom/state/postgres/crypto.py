"""`CryptoVault` in PostgreSQL: `mindroom.crypto_items`, read when a bot starts, every change written in order."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import psycopg

from mindroom.state.crypto import CryptoItems
from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresCryptoVault"]

_UPSERT = (
    "INSERT INTO mindroom.crypto_items (bot, kind, key, value, saved_at) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (bot, kind, key) DO UPDATE SET value = EXCLUDED.value, saved_at = EXCLUDED.saved_at"
)


class PostgresCryptoVault:
    """Every bot's items in one table of the state's database; writes go through the state's writer session."""

    def __init__(self, connection: StateConnection, location: str) -> None:
        self._conn = connection
        self._location = location

    @property
    def location(self) -> str:
        """The database (without its password) and the table."""
        return f"{self._location} (mindroom.crypto_items)"

    @property
    def shared(self) -> bool:
        """True: every machine that reaches the database reads the same items."""
        return True

    def load(self, bot_name: str) -> CryptoItems:
        """Every item of the bot, after the writes queued before (blocks on the writer session)."""

        def read(conn: psycopg.Connection[Any]) -> CryptoItems:
            rows = conn.execute(
                "SELECT kind, key, value FROM mindroom.crypto_items WHERE bot = %s", (bot_name,)
            ).fetchall()
            return {(kind, key): bytes(value) for kind, key, value in rows}

        return self._conn.call(read)

    def put(self, bot_name: str, kind: str, key: str, value: bytes) -> None:
        """Keep one item (queued; applied in order with the other writes)."""
        self._conn.write(_UPSERT, (bot_name, kind, key, value, time.time()))

    def put_many(self, bot_name: str, items: Iterable[tuple[str, str, bytes]]) -> None:
        """Keep several items (queued together; the writer applies them in one transaction)."""
        now = time.time()
        for kind, key, value in items:
            self._conn.write(_UPSERT, (bot_name, kind, key, value, now))

    def delete(self, bot_name: str, kind: str, key: str | None = None) -> None:
        """Drop one item, or every item of `kind` (queued)."""
        if key is None:
            self._conn.write("DELETE FROM mindroom.crypto_items WHERE bot = %s AND kind = %s", (bot_name, kind))
        else:
            self._conn.write(
                "DELETE FROM mindroom.crypto_items WHERE bot = %s AND kind = %s AND key = %s", (bot_name, kind, key)
            )

    def bots(self) -> list[str]:
        """The bots with items in the database."""
        rows = self._conn.call(lambda conn: conn.execute("SELECT DISTINCT bot FROM mindroom.crypto_items").fetchall())
        return sorted(str(row[0]) for row in rows)

    def close(self) -> None:
        """Nothing of its own: the backend closes the session."""
