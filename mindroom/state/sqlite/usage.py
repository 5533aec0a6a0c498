"""`UsageStore` in SQLite: `<data>/state/usage.db`, each batch in one transaction."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.usage import (
    CAP_COLUMNS,
    USAGE_COLUMNS,
    BudgetCap,
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
CREATE TABLE IF NOT EXISTS budget_caps (
    requester TEXT PRIMARY KEY,
    limit_usd REAL NOT NULL,
    set_by TEXT NOT NULL,
    set_at REAL NOT NULL
);
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

    def caps(self) -> dict[str, BudgetCap]:
        """Every person's own monthly limit."""
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(CAP_COLUMNS)} FROM budget_caps").fetchall()  # noqa: S608
        return {row[0]: BudgetCap(*row) for row in rows}

    def set_cap(self, cap: BudgetCap) -> None:
        """Keep one person's own monthly limit."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO budget_caps (requester, limit_usd, set_by, set_at) VALUES (?, ?, ?, ?)",
                (cap.requester, cap.limit_usd, cap.set_by, cap.set_at),
            )

    def remove_cap(self, requester: str) -> None:
        """Drop one person's own monthly limit."""
        with self._lock:
            self._db.execute("DELETE FROM budget_caps WHERE requester = ?", (requester,))

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
