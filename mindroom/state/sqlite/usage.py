"""`UsageStore` in SQLite: `<data>/state/usage.db`, each batch in one transaction."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.usage import (
    USAGE_COLUMNS,
    UsageQuery,
    UsageRecord,
    UsageTotals,
    query_sql,
    rollup_rows,
    rollup_sql,
    rollup_upsert,
    totals_of,
)

__all__ = ["SqliteUsageStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    record_id TEXT PRIMARY KEY,
    day TEXT NOT NULL,
    at REAL NOT NULL,
    requester TEXT NOT NULL,
    agent TEXT NOT NULL,
    room_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    model TEXT NOT NULL,
    turns INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    unpriced_turns INTEGER NOT NULL,
    rolled INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_at ON usage (at);
CREATE INDEX IF NOT EXISTS usage_requester_at ON usage (requester, at);
"""
_INSERT = f"INSERT OR IGNORE INTO usage ({', '.join(USAGE_COLUMNS)}) VALUES ({', '.join(['?'] * len(USAGE_COLUMNS))})"  # noqa: S608


class SqliteUsageStore:
    """`UsageStore` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA, synchronous_normal=True)

    def add(self, records: Sequence[UsageRecord]) -> None:
        """Keep a batch of turns (a record already kept is left as it is)."""
        if not records:
            return
        with self._lock, self._db:
            self._db.execute("BEGIN")
            self._db.executemany(_INSERT, [record.row() for record in records])

    def query(self, query: UsageQuery) -> list[UsageTotals]:
        """The sums of the turns `query` selects, one per group."""
        sql, params = query_sql(query, "usage", "?")
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return totals_of(rows, len(query.group_by))

    def roll_up(self, before: float) -> int:
        """Fold the turns before `before` into one row per day, person, agent, room and model."""
        with self._lock, self._db:
            self._db.execute("BEGIN")
            rows = rollup_rows(self._db.execute(rollup_sql("usage", "?"), (before,)).fetchall())
            self._db.executemany(rollup_upsert("usage", "?", "usage"), rows)
            return self._db.execute("DELETE FROM usage WHERE rolled = 0 AND at < ?", (before,)).rowcount

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
