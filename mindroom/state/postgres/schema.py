"""The daemon's tables in PostgreSQL (schema `mindroom`, beside agno's session tables) and the lock's key."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from mindroom.state.holder import LockHolder

__all__ = [
    "LOCK_KEY",
    "SCHEMA",
    "create_tables",
    "end_own_stale_session",
    "read_generation",
    "read_holder",
    "release_generation",
    "take_generation",
    "write_holder",
]

SCHEMA = "mindroom"
LOCK_KEY = int.from_bytes(hashlib.sha256(b"mindroom.state").digest()[:8], "big", signed=True)
"""The advisory lock of a database's state (advisory locks are per database: one state per database)."""

_DDL = (
    "CREATE SCHEMA IF NOT EXISTS mindroom",
    """CREATE TABLE IF NOT EXISTS mindroom.handled_events (
        entity TEXT NOT NULL,
        event_id TEXT NOT NULL,
        handled_at DOUBLE PRECISION NOT NULL,
        pending BOOLEAN NOT NULL DEFAULT FALSE,
        event_json TEXT,
        PRIMARY KEY (entity, event_id))""",
    "CREATE INDEX IF NOT EXISTS handled_events_at ON mindroom.handled_events (handled_at)",
    """CREATE TABLE IF NOT EXISTS mindroom.open_answers (
        txn_id TEXT PRIMARY KEY,
        response_event_id TEXT,
        entity TEXT NOT NULL,
        room_id TEXT NOT NULL,
        source_event_id TEXT NOT NULL,
        thread_root TEXT,
        started_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mindroom.rooms (
        entity TEXT NOT NULL,
        room_id TEXT NOT NULL,
        origin TEXT NOT NULL,
        room_key TEXT,
        remembered_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (entity, room_id))""",
    """CREATE TABLE IF NOT EXISTS mindroom.answers (
        entity TEXT NOT NULL,
        source_event_id TEXT NOT NULL,
        room_id TEXT NOT NULL,
        conversation TEXT NOT NULL,
        thread_root TEXT,
        requester_id TEXT NOT NULL,
        response_event_id TEXT NOT NULL,
        answered_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (entity, source_event_id))""",
    """CREATE TABLE IF NOT EXISTS mindroom.approvals (
        approval_id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        room_id TEXT NOT NULL,
        thread_root TEXT,
        tool_name TEXT NOT NULL,
        prompt TEXT NOT NULL,
        question TEXT NOT NULL,
        card_event_id TEXT UNIQUE,
        status TEXT NOT NULL,
        decided_by TEXT,
        reason TEXT,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        decided_at DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS mindroom.approval_grants (
        grant_id TEXT PRIMARY KEY,
        room_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        card_event_id TEXT NOT NULL,
        requester_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        operation TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS mindroom.auto_approve_windows (
        window_key TEXT PRIMARY KEY,
        room_id TEXT NOT NULL,
        thread_id TEXT,
        requester_id TEXT NOT NULL,
        set_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mindroom.schedules (
        task_id TEXT PRIMARY KEY,
        room_id TEXT NOT NULL,
        thread_id TEXT,
        agent_name TEXT,
        created_by TEXT NOT NULL,
        poster TEXT NOT NULL,
        kind TEXT NOT NULL,
        expression TEXT NOT NULL,
        message TEXT NOT NULL,
        description TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        next_run DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS mindroom.overrides (
        scope TEXT NOT NULL,
        room_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        set_by TEXT NOT NULL,
        set_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (scope, room_id, thread_id, key))""",
    """CREATE TABLE IF NOT EXISTS mindroom.sync_tokens (
        bot TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        saved_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mindroom.crypto_items (
        bot TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value BYTEA NOT NULL,
        saved_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (bot, kind, key))""",
    """CREATE TABLE IF NOT EXISTS mindroom.snapshots (
        name TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        written_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mindroom.lock_holder (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        since DOUBLE PRECISION NOT NULL,
        backend_pid INTEGER NOT NULL)""",
    # The fence: one generation per time the lock was taken; `released` once its holder let go cleanly.
    """CREATE TABLE IF NOT EXISTS mindroom.fence (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation BIGINT NOT NULL,
        released BOOLEAN NOT NULL DEFAULT FALSE)""",
    "ALTER TABLE mindroom.handled_events ADD COLUMN IF NOT EXISTS generation BIGINT",
    """CREATE TABLE IF NOT EXISTS mindroom.usage (
        record_id TEXT PRIMARY KEY,
        day TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        requester TEXT NOT NULL,
        agent TEXT NOT NULL,
        room_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        model TEXT NOT NULL,
        turns BIGINT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        tool_calls BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        unpriced_turns BIGINT NOT NULL,
        rolled SMALLINT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS usage_at ON mindroom.usage (at)",
    "CREATE INDEX IF NOT EXISTS usage_requester_at ON mindroom.usage (requester, at)",
    """CREATE TABLE IF NOT EXISTS mindroom.budget_caps (
        requester TEXT PRIMARY KEY,
        limit_usd DOUBLE PRECISION NOT NULL,
        set_by TEXT NOT NULL,
        set_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mindroom.oauth_connections (
        person TEXT NOT NULL,
        provider TEXT NOT NULL,
        sealed BYTEA NOT NULL,
        saved_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (person, provider))""",
)


def create_tables(conn: psycopg.Connection[Any]) -> None:
    """Create the schema and tables that are missing (run under the lock: concurrent DDL races)."""
    with conn.transaction():
        for statement in _DDL:
            conn.execute(statement)  # type: ignore[arg-type]  # constant text


def write_holder(conn: psycopg.Connection[Any], holder: LockHolder) -> None:
    """Name this session's process as the lock's holder."""
    conn.execute(
        "INSERT INTO mindroom.lock_holder (id, host, pid, since, backend_pid) VALUES (1, %s, %s, %s, pg_backend_pid())"
        " ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, since = EXCLUDED.since,"
        " backend_pid = EXCLUDED.backend_pid",
        (holder.host, holder.pid, holder.since),
    )


def read_holder(conn: psycopg.Connection[Any]) -> LockHolder | None:
    """The holder row, if the session that wrote it is still connected; None otherwise."""
    try:
        row = conn.execute(
            "SELECT host, pid, since FROM mindroom.lock_holder h"
            " WHERE EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = h.backend_pid)"
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        return None
    return LockHolder(host=row[0], pid=int(row[1]), since=float(row[2])) if row else None


def end_own_stale_session(conn: psycopg.Connection[Any], holder: LockHolder) -> bool:
    """End the session that holds the lock if `holder` (this process) wrote it: one the daemon lost touch with,
    which the server has not noticed yet. True when one was ended; another process's session is left alone."""
    try:
        row = conn.execute(
            "SELECT backend_pid FROM mindroom.lock_holder WHERE host = %s AND pid = %s AND since = %s"
            " AND backend_pid <> pg_backend_pid()",
            (holder.host, holder.pid, holder.since),
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        return False
    if row is None:
        return False
    ended = conn.execute("SELECT pg_terminate_backend(%s)", (row[0],)).fetchone()
    return bool(ended and ended[0])


def take_generation(conn: psycopg.Connection[Any]) -> tuple[int, bool]:
    """Under the lock just taken: the next generation, and whether the previous holder released the lock
    cleanly (True when there was none). A holder that did not may still think it holds the lock."""
    with conn.transaction():
        row = conn.execute("SELECT generation, released FROM mindroom.fence WHERE id = 1 FOR UPDATE").fetchone()
        generation = int(row[0]) + 1 if row else 1
        conn.execute(
            "INSERT INTO mindroom.fence (id, generation, released) VALUES (1, %s, FALSE)"
            " ON CONFLICT (id) DO UPDATE SET generation = EXCLUDED.generation, released = FALSE",
            (generation,),
        )
    return generation, bool(row[1]) if row else True


def read_generation(conn: psycopg.Connection[Any]) -> int | None:
    """The generation of the latest holder (None before any)."""
    row = conn.execute("SELECT generation FROM mindroom.fence WHERE id = 1").fetchone()
    return int(row[0]) if row else None


def release_generation(conn: psycopg.Connection[Any], generation: int) -> None:
    """The holder of `generation` lets go cleanly: the next one need not wait out its lease."""
    conn.execute("UPDATE mindroom.fence SET released = TRUE WHERE id = 1 AND generation = %s", (generation,))
