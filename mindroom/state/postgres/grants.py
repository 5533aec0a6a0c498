"""Timed approvals in PostgreSQL: grants and windows read into memory under the lock, every change written through.

Only the lock's holder writes, so the memory is the truth (as for approvals): each question is answered
there and each change follows as a row on the writer session, in order.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import psycopg

from mindroom.state.grants import (
    GRANT_COLUMNS,
    GRANT_RETENTION_S,
    WINDOW_COLUMNS,
    ApprovalGrant,
    AutoApproveWindow,
    window_key,
)
from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresGrantStore"]

_GRANT_FIELDS = [f.name for f in dataclasses.fields(ApprovalGrant)]
_WINDOW_FIELDS = WINDOW_COLUMNS.split(", ")


class PostgresGrantStore:
    """`GrantStore` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._grants: dict[str, ApprovalGrant] = {}
        self._windows: dict[str, AutoApproveWindow] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: drop what ended long enough ago, read the rest."""
        now = time.time()
        conn.execute("DELETE FROM mindroom.approval_grants WHERE expires_at < %s", (now - GRANT_RETENTION_S,))
        conn.execute("DELETE FROM mindroom.auto_approve_windows WHERE expires_at <= %s", (now,))
        grants = conn.execute(f"SELECT {GRANT_COLUMNS} FROM mindroom.approval_grants").fetchall()  # noqa: S608
        windows = conn.execute(f"SELECT {WINDOW_COLUMNS} FROM mindroom.auto_approve_windows").fetchall()  # noqa: S608
        with self._lock:
            for row in grants:
                grant = ApprovalGrant(*row)
                self._grants[grant.grant_id] = grant
            for row in windows:
                window = AutoApproveWindow(*row[1:])
                self._windows[window.key] = window

    def _save_grant(self, grant: ApprovalGrant) -> None:
        self._conn.write(
            f"INSERT INTO mindroom.approval_grants ({GRANT_COLUMNS})"  # noqa: S608 - fixed columns
            f" VALUES ({', '.join(['%s'] * len(_GRANT_FIELDS))}) ON CONFLICT (grant_id) DO UPDATE SET "
            + ", ".join(f"{name} = EXCLUDED.{name}" for name in _GRANT_FIELDS if name != "grant_id"),
            dataclasses.astuple(grant),
        )

    def add_grant(self, grant: ApprovalGrant) -> None:
        """Keep a new grant."""
        with self._lock:
            self._grants[grant.grant_id] = grant
        self._save_grant(grant)

    def grant_for_card(self, card_event_id: str) -> ApprovalGrant | None:
        """The grant given on this card, if one was (in any state)."""
        with self._lock:
            found = [g for g in self._grants.values() if g.card_event_id == card_event_id]
        return max(found, key=lambda g: g.created_at, default=None)

    def active_grant(
        self, room_id: str, thread_id: str, requester_id: str, agent: str, operation: str, now: float
    ) -> ApprovalGrant | None:
        """A grant covering this person's calls of `operation` by `agent` in this thread at `now`, if any."""
        scope = (room_id, thread_id, requester_id, agent, operation)
        with self._lock:
            found = [
                g
                for g in self._grants.values()
                if (g.room_id, g.thread_id, g.requester_id, g.agent, g.operation) == scope and g.active(now)
            ]
        return max(found, key=lambda g: g.expires_at, default=None)

    def revoke_grant(self, grant_id: str, at: float) -> bool:
        """End a grant early; False when it had ended already (expired or revoked)."""
        with self._lock:
            grant = self._grants.get(grant_id)
            if grant is None or not grant.active(at):
                return False
            grant = dataclasses.replace(grant, revoked_at=at)
            self._grants[grant_id] = grant
        self._save_grant(grant)
        return True

    def set_window(self, window: AutoApproveWindow) -> None:
        """Open a window, replacing the person's earlier one in that conversation."""
        with self._lock:
            self._windows[window.key] = window
        self._conn.write(
            f"INSERT INTO mindroom.auto_approve_windows ({WINDOW_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"  # noqa: S608
            " ON CONFLICT (window_key) DO UPDATE SET "
            + ", ".join(f"{name} = EXCLUDED.{name}" for name in _WINDOW_FIELDS if name != "window_key"),
            (window.key, *dataclasses.astuple(window)),
        )

    def end_window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> bool:
        """Close the person's window in this conversation; False when none was open at `now`."""
        key = window_key(room_id, thread_id, requester_id)
        with self._lock:
            window = self._windows.pop(key, None)
        if window is None:
            return False
        self._conn.write("DELETE FROM mindroom.auto_approve_windows WHERE window_key = %s", (key,))
        return window.expires_at > now

    def window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> AutoApproveWindow | None:
        """The person's window open at `now` in exactly this conversation, if any."""
        with self._lock:
            window = self._windows.get(window_key(room_id, thread_id, requester_id))
        return window if window is not None and window.expires_at > now else None

    def room_windows(self, room_id: str, now: float) -> list[AutoApproveWindow]:
        """Every window open at `now` in the room, by thread then person."""
        with self._lock:
            found = [w for w in self._windows.values() if w.room_id == room_id and w.expires_at > now]
        return sorted(found, key=lambda w: (w.thread_id or "", w.requester_id))

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
