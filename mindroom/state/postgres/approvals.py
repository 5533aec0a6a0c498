"""Tool-call approvals in PostgreSQL: the kept ones read into memory under the lock, every change written through.

Only the lock's holder writes, so the memory is the truth: `open` and `resolve` decide there (at most
once per approval) and the row follows on the writer session, in order.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import psycopg

from mindroom.state.approvals import COLUMNS, RETENTION_S, ApprovalRecord, ApprovalStatus
from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresApprovalStore"]

_FIELDS = [f.name for f in dataclasses.fields(ApprovalRecord)]


class PostgresApprovalStore:
    """`ApprovalStore` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._records: dict[str, ApprovalRecord] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: drop decided approvals past retention, read the rest."""
        cutoff = time.time() - RETENTION_S
        conn.execute("DELETE FROM mindroom.approvals WHERE status <> 'pending' AND decided_at < %s", (cutoff,))
        rows = conn.execute(f"SELECT {COLUMNS} FROM mindroom.approvals").fetchall()  # noqa: S608 - fixed columns
        with self._lock:
            for row in rows:
                record = ApprovalRecord(*row)
                self._records[record.approval_id] = record

    def _save(self, record: ApprovalRecord) -> None:
        self._conn.write(
            f"INSERT INTO mindroom.approvals ({COLUMNS}) VALUES ({', '.join(['%s'] * len(_FIELDS))})"  # noqa: S608
            " ON CONFLICT (approval_id) DO UPDATE SET "
            + ", ".join(f"{name} = EXCLUDED.{name}" for name in _FIELDS if name != "approval_id"),
            tuple(getattr(record, name) for name in _FIELDS),
        )

    def get(self, approval_id: str) -> ApprovalRecord | None:
        """The approval with this id, if it was ever asked."""
        with self._lock:
            return self._records.get(approval_id)

    def by_card(self, card_event_id: str) -> ApprovalRecord | None:
        """The approval asked on this Matrix event, if it is a card."""
        with self._lock:
            return next((r for r in self._records.values() if r.card_event_id == card_event_id), None)

    def open(self, record: ApprovalRecord) -> ApprovalRecord:
        """Store a new pending approval; when its id exists already (a replayed turn), return that one instead."""
        with self._lock:
            existing = self._records.get(record.approval_id)
            if existing is not None:
                return existing
            self._records[record.approval_id] = record
        self._save(record)
        return record

    def set_card(self, approval_id: str, card_event_id: str) -> None:
        """The approval's card was posted as `card_event_id`."""
        with self._lock:
            record = self._records.get(approval_id)
            if record is None:
                return
            record = dataclasses.replace(record, card_event_id=card_event_id)
            self._records[approval_id] = record
        self._save(record)

    def resolve(
        self, approval_id: str, status: ApprovalStatus, *, by: str | None = None, reason: str | None = None
    ) -> bool:
        """Decide a pending approval; False when it was no longer pending (someone else decided first)."""
        with self._lock:
            record = self._records.get(approval_id)
            if record is None or not record.pending:
                return False
            record = dataclasses.replace(record, status=status, decided_by=by, reason=reason, decided_at=time.time())
            self._records[approval_id] = record
        self._save(record)
        return True

    def overdue(self, now: float | None = None) -> list[ApprovalRecord]:
        """Pending approvals whose time is up, oldest first."""
        moment = time.time() if now is None else now
        with self._lock:
            due = [r for r in self._records.values() if r.pending and r.expires_at <= moment]
        return sorted(due, key=lambda r: r.expires_at)

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
