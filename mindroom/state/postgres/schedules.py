"""Schedules in PostgreSQL: read into memory under the lock, every change written through `StateConnection`."""

from __future__ import annotations

import threading
from dataclasses import astuple, fields, replace
from typing import Any

import psycopg

from mindroom.state.postgres.connection import StateConnection
from mindroom.state.schedules import ScheduledTask

__all__ = ["PostgresScheduleStore"]

_NAMES = [f.name for f in fields(ScheduledTask)]
_COLUMNS = ", ".join(_NAMES)
_UPSERT = (
    f"INSERT INTO mindroom.schedules ({_COLUMNS}) VALUES ({', '.join(['%s'] * len(_NAMES))})"  # noqa: S608
    " ON CONFLICT (task_id) DO UPDATE SET "
    + ", ".join(f"{name} = EXCLUDED.{name}" for name in _NAMES if name != "task_id")
)


class PostgresScheduleStore:
    """`ScheduleStore` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._tasks: dict[str, ScheduledTask] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read every schedule."""
        rows = conn.execute(f"SELECT {_COLUMNS} FROM mindroom.schedules").fetchall()  # noqa: S608
        with self._lock:
            for row in rows:
                task = ScheduledTask(*row)
                self._tasks[task.task_id] = task

    def _soonest(self, tasks: list[ScheduledTask]) -> list[ScheduledTask]:
        return sorted((task for task in tasks if task.next_run is not None), key=lambda task: task.next_run or 0.0)

    def add(self, task: ScheduledTask) -> None:
        """Store a new schedule."""
        with self._lock:
            if task.task_id in self._tasks:
                msg = f"a schedule with id {task.task_id!r} exists"
                raise ValueError(msg)
            self._tasks[task.task_id] = task
        self._conn.write(_UPSERT, astuple(task))

    def get(self, task_id: str) -> ScheduledTask | None:
        """One schedule by id."""
        with self._lock:
            return self._tasks.get(task_id)

    def in_room(self, room_id: str) -> list[ScheduledTask]:
        """The pending schedules of a room, soonest first."""
        with self._lock:
            return self._soonest([task for task in self._tasks.values() if task.room_id == room_id])

    def pending(self) -> list[ScheduledTask]:
        """Every schedule that will run again, soonest first."""
        with self._lock:
            return self._soonest(list(self._tasks.values()))

    def set_next_run(self, task_id: str, next_run: float | None) -> None:
        """Move a schedule to its next run; None deletes it (a one-off that ran)."""
        with self._lock:
            task = self._tasks.get(task_id)
            if next_run is None:
                self._tasks.pop(task_id, None)
            elif task is not None:
                self._tasks[task_id] = replace(task, next_run=next_run)
        if next_run is None:
            self._conn.write("DELETE FROM mindroom.schedules WHERE task_id = %s", (task_id,))
        else:
            self._conn.write("UPDATE mindroom.schedules SET next_run = %s WHERE task_id = %s", (next_run, task_id))

    def remove(self, task_id: str) -> bool:
        """Delete a schedule; False if there was none with this id."""
        with self._lock:
            removed = self._tasks.pop(task_id, None) is not None
        if removed:
            self._conn.write("DELETE FROM mindroom.schedules WHERE task_id = %s", (task_id,))
        return removed

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
