"""Schedules: what to post, where, for whom, and when it runs next.

`sqlite.schedules.SqliteScheduleStore` keeps them in a file under the data directory,
`postgres.schedules.PostgresScheduleStore` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ScheduleStore", "ScheduledTask"]


@dataclass(frozen=True, slots=True)
class ScheduledTask:
    """One schedule: where it posts, who asked, for which agent, when, and what."""

    task_id: str
    room_id: str
    thread_id: str | None
    agent_name: str | None
    created_by: str
    poster: str
    kind: str
    expression: str
    message: str
    description: str
    created_at: float
    next_run: float | None


class ScheduleStore(Protocol):
    """The daemon's schedules by id, and the ones still to run, soonest first."""

    def add(self, task: ScheduledTask) -> None:
        """Store a new schedule."""

    def get(self, task_id: str) -> ScheduledTask | None:
        """One schedule by id."""

    def in_room(self, room_id: str) -> list[ScheduledTask]:
        """The pending schedules of a room, soonest first."""

    def pending(self) -> list[ScheduledTask]:
        """Every schedule that will run again, soonest first."""

    def set_next_run(self, task_id: str, next_run: float | None) -> None:
        """Move a schedule to its next run; None deletes it (a one-off that ran)."""

    def remove(self, task_id: str) -> bool:
        """Delete a schedule; False if there was none with this id."""

    def close(self) -> None:
        """Release what the store holds of its own (the backend closes shared connections)."""
