"""Usage in PostgreSQL: each turn a queued upsert on the writer session; sums and roll-ups run on that session,
after every write queued before them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from mindroom.state.postgres.connection import StateConnection
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

__all__ = ["PostgresUsageStore"]

_TABLE = "mindroom.usage"
_INSERT = (
    f"INSERT INTO {_TABLE} ({', '.join(USAGE_COLUMNS)}) VALUES ({', '.join(['%s'] * len(USAGE_COLUMNS))})"  # noqa: S608
    " ON CONFLICT (record_id) DO NOTHING"
)


class PostgresUsageStore:
    """`UsageStore` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection

    def add(self, records: Sequence[UsageRecord]) -> None:
        """Queue a batch of turns (returns at once; applied in order, in the writer's next transaction)."""
        for record in records:
            self._conn.write(_INSERT, record.row())

    def query(self, query: UsageQuery) -> list[UsageTotals]:
        """The sums of the turns `query` selects, one per group (blocks until the session answers)."""
        sql, params = query_sql(query, _TABLE, "%s")

        def run(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]  # built from fixed names

        return totals_of(self._conn.call(run), len(query.group_by))

    def roll_up(self, before: float) -> int:
        """Fold the turns before `before` into one row per day, person, agent, room and model (one transaction)."""

        def run(conn: psycopg.Connection[Any]) -> int:
            with conn.transaction():
                selected = conn.execute(rollup_sql(_TABLE, "%s"), (before,)).fetchall()  # type: ignore[arg-type]
                with conn.cursor() as cursor:
                    cursor.executemany(rollup_upsert(f"{_TABLE} AS u", "%s", "u"), rollup_rows(selected))  # type: ignore[arg-type]
                deleted = conn.execute(f"DELETE FROM {_TABLE} WHERE rolled = 0 AND at < %s", (before,))  # type: ignore[arg-type]  # noqa: S608
                return deleted.rowcount

        return self._conn.call(run)

    def caps(self) -> dict[str, BudgetCap]:
        """Every person's own monthly limit (blocks until the session answers)."""

        def run(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            return conn.execute(f"SELECT {', '.join(CAP_COLUMNS)} FROM mindroom.budget_caps").fetchall()  # type: ignore[arg-type]  # noqa: S608

        return {row[0]: BudgetCap(*row) for row in self._conn.call(run)}

    def set_cap(self, cap: BudgetCap) -> None:
        """Queue one person's own monthly limit."""
        self._conn.write(
            "INSERT INTO mindroom.budget_caps (requester, limit_usd, set_by, set_at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (requester) DO UPDATE SET limit_usd = EXCLUDED.limit_usd, set_by = EXCLUDED.set_by,"
            " set_at = EXCLUDED.set_at",
            (cap.requester, cap.limit_usd, cap.set_by, cap.set_at),
        )

    def remove_cap(self, requester: str) -> None:
        """Queue the removal of one person's own monthly limit."""
        self._conn.write("DELETE FROM mindroom.budget_caps WHERE requester = %s", (requester,))

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
