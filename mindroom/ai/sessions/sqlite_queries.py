"""The reads and changes of agno's session and run rows in a SQLite file, as `sqlite3` statements.

Each function takes the store's connection and runs in its worker thread. They are the statements
agno's `AsyncSqliteDb` runs for the same calls (filters, order, counts, conflict rules), so both stores
answer alike on one file; what agno decodes from the rows is decoded with agno's own helpers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from agno.db.base import SessionType
from agno.db.utils import HISTORY_SKIP_STATUSES, deserialize_session_json_fields, merge_runs_table_with_legacy_blob

from mindroom.ai.sessions.sqlite_tables import JSON_COLUMNS, Tables, transaction

__all__ = [
    "SessionFilter",
    "delete_runs",
    "delete_session",
    "read_runs",
    "read_session",
    "read_sessions",
    "rows",
    "scrub_legacy_runs",
    "sorted_by",
]

SessionFilter = tuple[str, list[Any]]
"""A WHERE clause (empty for none) and its parameters."""


def rows(connection: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The rows `sql` selects, as dicts, JSON columns decoded (as SQLAlchemy's JSON type does for agno)."""
    cursor = connection.execute(sql, params)
    names = [column[0] for column in cursor.description]
    found = []
    for values in cursor:
        row = dict(zip(names, values, strict=True))
        for name in JSON_COLUMNS.intersection(row):
            if isinstance(row[name], str):
                row[name] = json.loads(row[name])
        found.append(row)
    return found


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}


def sorted_by(connection: sqlite3.Connection, table: str, sort_by: str | None, sort_order: str | None) -> str:
    """agno's ORDER BY for `sort_by` (none for an unknown column; `updated_at` falls back to `created_at`)."""
    if sort_by is None or sort_by not in _columns(connection, table):
        return ""
    column = "coalesce(updated_at, created_at)" if sort_by == "updated_at" else sort_by
    return f" ORDER BY {column} {'ASC' if sort_order == 'asc' else 'DESC'}"


def _page(limit: int | None, page: int | None) -> str:
    if limit is None:
        return ""
    return f" LIMIT {int(limit)}" + (f" OFFSET {(int(page) - 1) * int(limit)}" if page is not None else "")


def _all_runs(connection: sqlite3.Connection, tables: Tables, session_id: str) -> list[dict[str, Any]]:
    found = rows(
        connection,
        f"SELECT run_data FROM {tables.runs} WHERE session_id = ? "  # noqa: S608 - agno's table name
        "ORDER BY run_index ASC, created_at ASC, run_id ASC",
        (session_id,),
    )
    return [row["run_data"] for row in found]


def _last_runs(connection: sqlite3.Connection, tables: Tables, session_id: str, limit: int) -> list[dict[str, Any]]:
    """The last `limit` runs a history shows (no member runs, none of the skipped statuses), oldest first."""
    marks = ", ".join("?" for _ in HISTORY_SKIP_STATUSES)
    found = rows(
        connection,
        f"SELECT run_data FROM {tables.runs} WHERE session_id = ? AND parent_run_id IS NULL "  # noqa: S608
        f"AND (status IS NULL OR status NOT IN ({marks})) "
        f"ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT {int(limit)}",
        (session_id, *HISTORY_SKIP_STATUSES),
    )
    return [row["run_data"] for row in reversed(found)]


def read_session(
    connection: sqlite3.Connection,
    tables: Tables,
    found: set[str],
    session_id: str,
    session_type: SessionType | None,
    user_id: str | None,
    deserialize: bool,
    runs_limit: int | None,
) -> tuple[dict[str, Any], list[tuple[str, str]] | None] | None:
    """A session's row with its runs (agno's `get_session`); an agent session's runs as (id, raw text) rows
    when they are to be deserialized, for agno's run object cache."""
    from agno.db.utils import filter_context_runs

    where, params = "session_id = ?", [session_id]
    if user_id is not None:
        where, params = where + " AND user_id = ?", [*params, user_id]
    with transaction(connection):
        row = rows(connection, f"SELECT * FROM {tables.sessions} WHERE {where}", params)  # noqa: S608
        if not row:
            return None
        raw = deserialize_session_json_fields(row[0])
        legacy = raw.get("runs")
        has_runs = "runs" in found
        run_rows = None
        if has_runs and runs_limit is not None and not legacy:
            raw["runs"] = _last_runs(connection, tables, session_id, runs_limit)
        elif (
            has_runs
            and not legacy
            and deserialize
            and raw.get("session_type") == SessionType.AGENT.value
            and session_type in (None, SessionType.AGENT)
        ):
            run_rows = [
                (run_id, text if isinstance(text, str) else json.dumps(text))
                for run_id, text in connection.execute(
                    f"SELECT run_id, CAST(run_data AS TEXT) FROM {tables.runs} WHERE session_id = ? "  # noqa: S608
                    "ORDER BY run_index ASC, created_at ASC, run_id ASC",
                    (session_id,),
                )
            ]
            raw["runs"] = None
        elif has_runs:
            merged = merge_runs_table_with_legacy_blob(_all_runs(connection, tables, session_id), legacy)
            raw["runs"] = filter_context_runs(merged)[-runs_limit:] if runs_limit is not None else merged
        elif runs_limit is not None:
            raw["runs"] = filter_context_runs(merge_runs_table_with_legacy_blob([], legacy))[-runs_limit:]
    return raw, run_rows


def read_sessions(
    connection: sqlite3.Connection,
    tables: Tables,
    found: set[str],
    where: SessionFilter,
    order: tuple[str | None, str | None],
    page: tuple[int | None, int | None],
    include_runs: bool,
) -> tuple[list[dict[str, Any]], int]:
    """The session rows agno's `get_sessions` finds, with their runs unless not `include_runs`, and their count."""
    clause, params = where
    select = f"SELECT * FROM {tables.sessions}" + (f" WHERE {clause}" if clause else "")  # noqa: S608
    with transaction(connection):
        count = connection.execute(f"SELECT count(*) FROM ({select})", params).fetchone()[0]  # noqa: S608
        sql = select + sorted_by(connection, tables.sessions, *order) + _page(*page)
        sessions = [deserialize_session_json_fields(row) for row in rows(connection, sql, params)]
        if include_runs and "runs" in found and sessions:
            ids = [session["session_id"] for session in sessions]
            by_session: dict[str, list[dict[str, Any]]] = {}
            for row in rows(
                connection,
                f"SELECT session_id, run_data FROM {tables.runs} "  # noqa: S608
                f"WHERE session_id IN ({', '.join('?' for _ in ids)}) ORDER BY run_index ASC, created_at ASC",
                ids,
            ):
                by_session.setdefault(row["session_id"], []).append(row["run_data"])
            for session in sessions:
                session["runs"] = merge_runs_table_with_legacy_blob(
                    by_session.get(session["session_id"], []), session.get("runs")
                )
        elif not include_runs:
            for session in sessions:
                session["runs"] = None
    return sessions, count or 0


def read_runs(
    connection: sqlite3.Connection,
    tables: Tables,
    filters: dict[str, Any],
    order: tuple[str | None, str | None],
    page: tuple[int | None, int | None],
) -> tuple[list[dict[str, Any]], int]:
    """The run rows agno's `get_runs` finds (`filters`: column to value), and their count."""
    clause = " AND ".join(f"{name} = ?" for name in filters)
    params = list(filters.values())
    select = f"SELECT * FROM {tables.runs}" + (f" WHERE {clause}" if clause else "")  # noqa: S608
    with transaction(connection):
        count = connection.execute(f"SELECT count(*) FROM ({select})", params).fetchone()[0]  # noqa: S608
        ordering = (
            sorted_by(connection, tables.runs, *order)
            if order[0] is not None
            else " ORDER BY run_index ASC, created_at ASC"
        )
        return rows(connection, select + ordering + _page(*page), params), count or 0


def scrub_legacy_runs(connection: sqlite3.Connection, tables: Tables, run_ids: list[str]) -> None:
    """Remove deleted runs from an older sessions table's `runs` column too, as agno does (no such column: nothing)."""
    if not run_ids or "runs" not in _columns(connection, tables.sessions):
        return
    wanted = set(run_ids)
    with transaction(connection, write=True):
        for session_id, text in connection.execute(
            f"SELECT session_id, runs FROM {tables.sessions} WHERE runs IS NOT NULL"  # noqa: S608
        ).fetchall():
            try:
                runs = json.loads(text) if isinstance(text, str) else text
            except ValueError:
                continue
            if not isinstance(runs, list):
                continue
            kept = [run for run in runs if not (isinstance(run, dict) and run.get("run_id") in wanted)]
            if len(kept) != len(runs):
                connection.execute(
                    f"UPDATE {tables.sessions} SET runs = ? WHERE session_id = ?",  # noqa: S608
                    (json.dumps(kept), session_id),
                )


def delete_runs(connection: sqlite3.Connection, tables: Tables, run_ids: list[str]) -> int:
    """Delete the runs `run_ids`; how many there were."""
    with transaction(connection, write=True):
        deleted = connection.execute(
            f"DELETE FROM {tables.runs} WHERE run_id IN ({', '.join('?' for _ in run_ids)})",  # noqa: S608
            run_ids,
        ).rowcount
    scrub_legacy_runs(connection, tables, run_ids)
    return deleted


def delete_session(
    connection: sqlite3.Connection, tables: Tables, found: set[str], session_id: str, user_id: str | None
) -> bool:
    """Delete a session (only `user_id`'s, when given) and its runs; whether it was there."""
    where, params = "session_id = ?", [session_id]
    if user_id is not None:
        where, params = where + " AND user_id = ?", [*params, user_id]
    with transaction(connection, write=True):
        if not connection.execute(f"DELETE FROM {tables.sessions} WHERE {where}", params).rowcount:  # noqa: S608
            return False
        if "runs" in found:
            connection.execute(f"DELETE FROM {tables.runs} WHERE session_id = ?", (session_id,))  # noqa: S608
    return True
