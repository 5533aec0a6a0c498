"""`CryptoVault` in SQLite: `<data>/crypto/<bot>/vault.db` per bot (0600), beside the device's own store."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.crypto import CryptoItems

__all__ = ["VAULT_FILE_NAME", "SqliteCryptoVault"]

VAULT_FILE_NAME = "vault.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (kind, key)
);
"""


class SqliteCryptoVault:
    """Each bot's items in a SQLite file of its own, every change committed at once."""

    def __init__(self, storage_root: Path) -> None:
        self._root = Path(storage_root) / "crypto"
        self._lock = threading.Lock()
        self._open: dict[str, sqlite3.Connection] = {}

    @property
    def location(self) -> str:
        """`<data>/crypto`."""
        return str(self._root)

    @property
    def shared(self) -> bool:
        """False: files of one machine."""
        return False

    def path(self, bot_name: str) -> Path:
        """The bot's file."""
        return self._root / bot_name / VAULT_FILE_NAME

    def _db(self, bot_name: str) -> sqlite3.Connection:
        db = self._open.get(bot_name)
        if db is None:
            db = self._open[bot_name] = open_private_database(self.path(bot_name), _SCHEMA)
        return db

    def load(self, bot_name: str) -> CryptoItems:
        """Every item of the bot (none, and no file made, when it has none)."""
        with self._lock:
            if bot_name not in self._open and not self.path(bot_name).exists():
                return {}
            rows = self._db(bot_name).execute("SELECT kind, key, value FROM items").fetchall()
        return {(kind, key): bytes(value) for kind, key, value in rows}

    def put(self, bot_name: str, kind: str, key: str, value: bytes) -> None:
        """Keep one item."""
        self.put_many(bot_name, [(kind, key, value)])

    def put_many(self, bot_name: str, items: Iterable[tuple[str, str, bytes]]) -> None:
        """Keep several items in one transaction."""
        rows = list(items)
        if not rows:
            return
        with self._lock:
            db = self._db(bot_name)
            with db:
                db.execute("BEGIN")
                db.executemany("INSERT OR REPLACE INTO items (kind, key, value) VALUES (?, ?, ?)", rows)

    def delete(self, bot_name: str, kind: str, key: str | None = None) -> None:
        """Drop one item, or every item of `kind`."""
        with self._lock:
            if bot_name not in self._open and not self.path(bot_name).exists():
                return
            db = self._db(bot_name)
            if key is None:
                db.execute("DELETE FROM items WHERE kind = ?", (kind,))
            else:
                db.execute("DELETE FROM items WHERE kind = ? AND key = ?", (kind, key))

    def bots(self) -> list[str]:
        """The bots with a vault file."""
        if not self._root.is_dir():
            return []
        return sorted(entry.name for entry in self._root.iterdir() if (entry / VAULT_FILE_NAME).is_file())

    def close(self) -> None:
        """Close every file."""
        with self._lock:
            for db in self._open.values():
                db.close()
            self._open.clear()
