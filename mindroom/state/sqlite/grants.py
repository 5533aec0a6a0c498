"""`GrantStore` in SQLite: `<data>/state/grants.db`, every write committed at once."""

from __future__ import annotations

import threading
import time
from dataclasses import astuple, fields
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.grants import (
    GRANT_COLUMNS,
    GRANT_RETENTION_S,
    WINDOW_COLUMNS,
    ApprovalGrant,
    AutoApproveWindow,
    window_key,
)

__all__ = ["SqliteGrantStore"]

_GRANT_MARKS = ", ".join("?" * len(fields(ApprovalGrant)))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_grants (
    grant_id TEXT PRIMARY KEY,
    room_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    card_event_id TEXT NOT NULL,
    requester_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    operation TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    revoked_at REAL
);
CREATE INDEX IF NOT EXISTS approval_grants_by_card ON approval_grants (card_event_id);
CREATE INDEX IF NOT EXISTS approval_grants_by_scope ON approval_grants (room_id, thread_id, requester_id, agent);
CREATE TABLE IF NOT EXISTS auto_approve_windows (
    window_key TEXT PRIMARY KEY,
    room_id TEXT NOT NULL,
    thread_id TEXT,
    requester_id TEXT NOT NULL,
    set_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
"""


class SqliteGrantStore:
    """`GrantStore` in one SQLite file; every write is committed at once, so a grant survives a crash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA, synchronous_normal=True)
        now = time.time()
        self._db.execute("DELETE FROM approval_grants WHERE expires_at < ?", (now - GRANT_RETENTION_S,))
        self._db.execute("DELETE FROM auto_approve_windows WHERE expires_at <= ?", (now,))

    def add_grant(self, grant: ApprovalGrant) -> None:
        """Keep a new grant."""
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO approval_grants ({GRANT_COLUMNS}) VALUES ({_GRANT_MARKS})",  # noqa: S608
                astuple(grant),
            )

    def grant_for_card(self, card_event_id: str) -> ApprovalGrant | None:
        """The grant given on this card, if one was (in any state)."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {GRANT_COLUMNS} FROM approval_grants WHERE card_event_id = ?"  # noqa: S608 - fixed columns
                " ORDER BY created_at DESC LIMIT 1",
                (card_event_id,),
            ).fetchone()
        return ApprovalGrant(*row) if row else None

    def active_grant(
        self, room_id: str, thread_id: str, requester_id: str, agent: str, operation: str, now: float
    ) -> ApprovalGrant | None:
        """A grant covering this person's calls of `operation` by `agent` in this thread at `now`, if any."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {GRANT_COLUMNS} FROM approval_grants WHERE room_id = ? AND thread_id = ?"  # noqa: S608
                " AND requester_id = ? AND agent = ? AND operation = ? AND revoked_at IS NULL AND expires_at > ?"
                " ORDER BY expires_at DESC LIMIT 1",
                (room_id, thread_id, requester_id, agent, operation, now),
            ).fetchone()
        return ApprovalGrant(*row) if row else None

    def revoke_grant(self, grant_id: str, at: float) -> bool:
        """End a grant early; False when it had ended already (expired or revoked)."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE approval_grants SET revoked_at = ?"
                " WHERE grant_id = ? AND revoked_at IS NULL AND expires_at > ?",
                (at, grant_id, at),
            )
        return cursor.rowcount == 1

    def set_window(self, window: AutoApproveWindow) -> None:
        """Open a window, replacing the person's earlier one in that conversation."""
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO auto_approve_windows ({WINDOW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",  # noqa: S608
                (window.key, window.room_id, window.thread_id, window.requester_id, window.set_at, window.expires_at),
            )

    def end_window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> bool:
        """Close the person's window in this conversation; False when none was open at `now`."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM auto_approve_windows WHERE window_key = ? AND expires_at > ?",
                (window_key(room_id, thread_id, requester_id), now),
            )
        return cursor.rowcount == 1

    def window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> AutoApproveWindow | None:
        """The person's window open at `now` in exactly this conversation, if any."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {WINDOW_COLUMNS} FROM auto_approve_windows WHERE window_key = ? AND expires_at > ?",  # noqa: S608
                (window_key(room_id, thread_id, requester_id), now),
            ).fetchone()
        return AutoApproveWindow(*row[1:]) if row else None

    def room_windows(self, room_id: str, now: float) -> list[AutoApproveWindow]:
        """Every window open at `now` in the room, by thread then person."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {WINDOW_COLUMNS} FROM auto_approve_windows WHERE room_id = ? AND expires_at > ?"  # noqa: S608
                " ORDER BY COALESCE(thread_id, ''), requester_id",
                (room_id, now),
            ).fetchall()
        return [AutoApproveWindow(*row[1:]) for row in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
