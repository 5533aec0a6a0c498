"""Copy a data directory's SQLite state into PostgreSQL, then count both sides.

Runs under both locks (the data directory's and the database's), so no daemon can run on either while
it copies. Every row is upserted, so running it again is harmless. Agent sessions are agno's, copied by
`mindroom.ai.sessions.history.copy_sessions`; this module copies the daemon's own state.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindroom.state.approvals import ApprovalRecord
from mindroom.state.grants import GRANT_COLUMNS, WINDOW_COLUMNS
from mindroom.state.schedules import ScheduledTask
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.state.sqlite.connections import SqliteConnectionStore
from mindroom.state.sqlite.grants import SqliteGrantStore
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.overrides import SqliteOverrideStore
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from mindroom.state.sqlite.schedules import SqliteScheduleStore
from mindroom.state.sqlite.usage import SqliteUsageStore
from mindroom.state.usage import CAP_COLUMNS, USAGE_COLUMNS

if TYPE_CHECKING:
    import psycopg

__all__ = ["CopyCount", "copy_state"]


@dataclass(frozen=True, slots=True)
class CopyCount:
    """One kind of state: rows in SQLite, and how many of those same rows PostgreSQL now holds."""

    kind: str
    source: int
    target: int

    @property
    def verified(self) -> bool:
        """True when every source row is in the target."""
        return self.source == self.target


@dataclass(frozen=True, slots=True)
class _Table:
    kind: str
    file: str
    table: str
    columns: tuple[str, ...]
    keys: tuple[str, ...]


_TABLES = (
    _Table(
        "handled events",
        "daemon.db",
        "handled_events",
        ("entity", "event_id", "handled_at", "pending", "event_json"),
        ("entity", "event_id"),
    ),
    _Table(
        "open answers",
        "daemon.db",
        "open_answers",
        ("txn_id", "response_event_id", "entity", "room_id", "source_event_id", "thread_root", "started_at"),
        ("txn_id",),
    ),
    _Table(
        "rooms",
        "rooms.db",
        "rooms",
        ("entity", "room_id", "origin", "room_key", "remembered_at"),
        ("entity", "room_id"),
    ),
    _Table("schedules", "schedules.db", "schedules", tuple(f.name for f in fields(ScheduledTask)), ("task_id",)),
    _Table(
        "answers",
        "answers.db",
        "answers",
        (
            "entity",
            "source_event_id",
            "room_id",
            "conversation",
            "thread_root",
            "requester_id",
            "response_event_id",
            "answered_at",
        ),
        ("entity", "source_event_id"),
    ),
    _Table("approvals", "approvals.db", "approvals", tuple(f.name for f in fields(ApprovalRecord)), ("approval_id",)),
    _Table("approval grants", "grants.db", "approval_grants", tuple(GRANT_COLUMNS.split(", ")), ("grant_id",)),
    _Table(
        "auto-approve windows", "grants.db", "auto_approve_windows", tuple(WINDOW_COLUMNS.split(", ")), ("window_key",)
    ),
    _Table(
        "overrides",
        "overrides.db",
        "overrides",
        ("scope", "room_id", "thread_id", "key", "value", "set_by", "set_at"),
        ("scope", "room_id", "thread_id", "key"),
    ),
    _Table("usage", "usage.db", "usage", USAGE_COLUMNS, ("record_id",)),
    _Table("budget caps", "usage.db", "budget_caps", CAP_COLUMNS, ("requester",)),
    # Sealed as they are: the seal binds person and provider, not the database, and the key stays the same.
    _Table(
        "oauth connections",
        "connections.db",
        "oauth_connections",
        ("person", "provider", "sealed", "saved_at"),
        ("person", "provider"),
    ),
)
_OPENERS: dict[
    str,
    type[
        SqliteTurnJournal
        | SqliteRoomMemory
        | SqliteScheduleStore
        | SqliteAnswerLog
        | SqliteApprovalStore
        | SqliteGrantStore
        | SqliteOverrideStore
        | SqliteUsageStore
        | SqliteConnectionStore
    ],
] = {
    "daemon.db": SqliteTurnJournal,
    "rooms.db": SqliteRoomMemory,
    "answers.db": SqliteAnswerLog,
    "approvals.db": SqliteApprovalStore,
    "grants.db": SqliteGrantStore,
    "schedules.db": SqliteScheduleStore,
    "overrides.db": SqliteOverrideStore,
    "usage.db": SqliteUsageStore,
    "connections.db": SqliteConnectionStore,
}


def _read_sqlite(state_dir: Path, spec: _Table) -> list[tuple[Any, ...]]:
    path = state_dir / spec.file
    if not path.exists():
        return []
    _OPENERS[spec.file](path).close()  # brings a file an older version wrote up to the current layout
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(f"SELECT {', '.join(spec.columns)} FROM {spec.table}").fetchall()  # noqa: S608
    finally:
        db.close()
    if spec.table == "handled_events":
        rows = [(*row[:3], bool(row[3]), row[4]) for row in rows]
    return rows


def _upsert(conn: psycopg.Connection[Any], spec: _Table, rows: Sequence[tuple[Any, ...]]) -> None:
    others = [column for column in spec.columns if column not in spec.keys]
    marks = ", ".join(["%s"] * len(spec.columns))
    sql = (
        f"INSERT INTO mindroom.{spec.table} ({', '.join(spec.columns)}) VALUES ({marks})"  # noqa: S608
        f" ON CONFLICT ({', '.join(spec.keys)}) DO UPDATE SET "
        + ", ".join(f"{column} = EXCLUDED.{column}" for column in others)
    )
    with conn.cursor() as cursor:
        cursor.executemany(sql, rows)  # type: ignore[arg-type]  # built from the constant table specs


def _count_present(conn: psycopg.Connection[Any], table: str, keys: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    if not rows:
        return 0
    arrays = [[row[i] for row in rows] for i in range(len(keys))]
    unnest = ", ".join(["%s::text[]"] * len(keys))
    sql = f"SELECT count(*) FROM mindroom.{table} WHERE ({', '.join(keys)}) IN (SELECT * FROM unnest({unnest}))"  # noqa: S608
    found = conn.execute(sql, arrays).fetchone()  # type: ignore[arg-type]
    return int(found[0]) if found else 0


def _tokens(storage_root: Path) -> list[tuple[str, str, float]]:
    folder = storage_root / "matrix" / "sync"
    found = []
    for path in sorted(folder.glob("*.token")) if folder.is_dir() else []:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            found.append((path.stem, token, path.stat().st_mtime))
    return found


def copy_state(storage_root: Path, conn: psycopg.Connection[Any]) -> list[CopyCount]:
    """Copy the journal, rooms, schedules, overrides, usage and sync tokens (on the locked session); the counts."""
    state_dir = storage_root / "state"
    counts = []
    with conn.transaction():
        for spec in _TABLES:
            rows = _read_sqlite(state_dir, spec)
            _upsert(conn, spec, rows)
            keys = [tuple(row[spec.columns.index(key)] for key in spec.keys) for row in rows]
            counts.append(CopyCount(spec.kind, len(rows), _count_present(conn, spec.table, spec.keys, keys)))
        tokens = _tokens(storage_root)
        token_spec = _Table("sync tokens", "", "sync_tokens", ("bot", "token", "saved_at"), ("bot",))
        _upsert(conn, token_spec, tokens)
        copied = conn.execute(
            "SELECT count(*) FROM mindroom.sync_tokens t JOIN unnest(%s::text[], %s::text[]) AS s(bot, token)"
            " ON t.bot = s.bot AND t.token = s.token",
            ([bot for bot, _t, _at in tokens], [token for _b, token, _at in tokens]),
        ).fetchone()
        counts.append(CopyCount("sync tokens", len(tokens), int(copied[0]) if copied else 0))
    return counts
