"""`ApprovalStore` in SQLite: `<data>/state/approvals.db`, every write committed at once."""

from __future__ import annotations

import threading
import time
from dataclasses import fields
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.approvals import COLUMNS, RETENTION_S, ApprovalRecord, ApprovalStatus

__all__ = ["SqliteApprovalStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    room_id TEXT NOT NULL,
    thread_root TEXT,
    tool_name TEXT NOT NULL,
    prompt TEXT NOT NULL,
    question TEXT NOT NULL,
    card_event_id TEXT,
    status TEXT NOT NULL,
    decided_by TEXT,
    reason TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    decided_at REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS approvals_by_card ON approvals (card_event_id);
CREATE INDEX IF NOT EXISTS approvals_pending ON approvals (status, expires_at);
"""


class SqliteApprovalStore:
    """`ApprovalStore` in one SQLite file; every write is committed at once, so a pending approval survives a crash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA, synchronous_normal=True)
        self._db.execute(
            "DELETE FROM approvals WHERE status != 'pending' AND decided_at < ?", (time.time() - RETENTION_S,)
        )

    def _one(self, where: str, value: str) -> ApprovalRecord | None:
        with self._lock:
            row = self._db.execute(f"SELECT {COLUMNS} FROM approvals WHERE {where} = ?", (value,)).fetchone()  # noqa: S608 - fixed column names
        return ApprovalRecord(*row) if row else None

    def get(self, approval_id: str) -> ApprovalRecord | None:
        """The approval with this id, if it was ever asked."""
        return self._one("approval_id", approval_id)

    def by_card(self, card_event_id: str) -> ApprovalRecord | None:
        """The approval asked on this Matrix event, if it is a card."""
        return self._one("card_event_id", card_event_id)

    def open(self, record: ApprovalRecord) -> ApprovalRecord:
        """Store a new pending approval; when its id exists already (a replayed turn), return that one instead."""
        with self._lock:
            self._db.execute(
                f"INSERT OR IGNORE INTO approvals ({COLUMNS}) VALUES ({', '.join('?' * len(fields(record)))})",  # noqa: S608
                tuple(getattr(record, f.name) for f in fields(record)),
            )
            row = self._db.execute(
                f"SELECT {COLUMNS} FROM approvals WHERE approval_id = ?",  # noqa: S608 - fixed column names
                (record.approval_id,),
            ).fetchone()
        return ApprovalRecord(*row)

    def set_card(self, approval_id: str, card_event_id: str) -> None:
        """The approval's card was posted as `card_event_id`."""
        with self._lock:
            self._db.execute(
                "UPDATE approvals SET card_event_id = ? WHERE approval_id = ?", (card_event_id, approval_id)
            )

    def resolve(
        self, approval_id: str, status: ApprovalStatus, *, by: str | None = None, reason: str | None = None
    ) -> bool:
        """Decide a pending approval; False when it was no longer pending (someone else decided first)."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?"
                " WHERE approval_id = ? AND status = 'pending'",
                (status, by, reason, time.time(), approval_id),
            )
        return cursor.rowcount == 1

    def overdue(self, now: float | None = None) -> list[ApprovalRecord]:
        """Pending approvals whose time is up, oldest first."""
        moment = time.time() if now is None else now
        with self._lock:
            rows = self._db.execute(
                f"SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ?"  # noqa: S608
                " ORDER BY expires_at",
                (moment,),
            ).fetchall()
        return [ApprovalRecord(*row) for row in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
