"""Which message each agent answered with which message, so an edit of a question can edit its answer.

One row per (agent, question): where the conversation is (room and thread), who asked, and the answer's
event id. Kept for as long as handled events are (30 days). `sqlite.answers.SqliteAnswerLog` keeps them
in a file under the data directory, `postgres.answers.PostgresAnswerLog` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["RETENTION_S", "AnswerLog", "AnswerRecord"]

RETENTION_S = 30 * 24 * 3600
"""How long an answer can still be changed by editing its question."""


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """One answered question: its room, its conversation (thread or room), who asked, and the answer's id."""

    entity: str
    source_event_id: str
    room_id: str
    conversation: str
    thread_root: str | None
    requester_id: str
    response_event_id: str


class AnswerLog(Protocol):
    """Answered questions per agent."""

    def record(self, answer: AnswerRecord) -> None:
        """Remember (or refresh) an answer; the newest answer of a conversation is the one an edit may change."""

    def for_question(self, entity: str, source_event_id: str) -> AnswerRecord | None:
        """The answer `entity` gave to `source_event_id`, if any."""

    def latest(self, entity: str, conversation: str) -> AnswerRecord | None:
        """The newest answer of `entity` in a conversation."""

    def close(self) -> None:
        """Release what the log holds of its own (the backend closes shared connections)."""
