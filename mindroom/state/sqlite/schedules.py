"""`ScheduleStore` in SQLite: `<data>/state/schedules.db`, every change committed at once."""

from __future__ import annotations

import threading
from dataclasses import astuple, fields
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.schedules import ScheduledTask

__all__ = ["SqliteScheduleStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
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
    created_at REAL NOT NULL,
    next_run REAL
);
CREATE INDEX IF NOT EXISTS schedules_next_run ON schedules (next_run);
"""


_COLUMNS = ", ".join(f.name for f in fields(ScheduledTask))


class SqliteScheduleStore:
    """`ScheduleStore` in one SQLite file; every change is committed at once, so a crash loses nothing stored."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA)

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[ScheduledTask]:
        with self._lock:
            return [ScheduledTask(*row) for row in self._db.execute(sql, params).fetchall()]

    def add(self, task: ScheduledTask) -> None:
        """Store a new schedule."""
        marks = ", ".join("?" * len(fields(ScheduledTask)))
        with self._lock:
            self._db.execute(f"INSERT INTO schedules ({_COLUMNS}) VALUES ({marks})", astuple(task))  # noqa: S608

    def get(self, task_id: str) -> ScheduledTask | None:
        """One schedule by id."""
        rows = self._rows(f"SELECT {_COLUMNS} FROM schedules WHERE task_id = ?", (task_id,))  # noqa: S608
        return rows[0] if rows else None

    def in_room(self, room_id: str) -> list[ScheduledTask]:
        """The pending schedules of a room, soonest first."""
        sql = f"SELECT {_COLUMNS} FROM schedules WHERE room_id = ? AND next_run IS NOT NULL ORDER BY next_run"  # noqa: S608
        return self._rows(sql, (room_id,))

    def pending(self) -> list[ScheduledTask]:
        """Every schedule that will run again, soonest first."""
        return self._rows(f"SELECT {_COLUMNS} FROM schedules WHERE next_run IS NOT NULL ORDER BY next_run")  # noqa: S608

    def set_next_run(self, task_id: str, next_run: float | None) -> None:
        """Move a schedule to its next run; None deletes it (a one-off that ran)."""
        with self._lock:
            if next_run is None:
                self._db.execute("DELETE FROM schedules WHERE task_id = ?", (task_id,))
            else:
                self._db.execute("UPDATE schedules SET next_run = ? WHERE task_id = ?", (next_run, task_id))

    def remove(self, task_id: str) -> bool:
        """Delete a schedule; False if there was none with this id."""
        with self._lock:
            return self._db.execute("DELETE FROM schedules WHERE task_id = ?", (task_id,)).rowcount == 1

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
