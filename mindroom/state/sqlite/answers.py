"""`AnswerLog` in SQLite: `<data>/state/answers.db`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.answers import RETENTION_S, AnswerRecord

__all__ = ["SqliteAnswerLog"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    entity TEXT NOT NULL,
    source_event_id TEXT NOT NULL,
    room_id TEXT NOT NULL,
    conversation TEXT NOT NULL,
    thread_root TEXT,
    requester_id TEXT NOT NULL,
    response_event_id TEXT NOT NULL,
    answered_at REAL NOT NULL,
    PRIMARY KEY (entity, source_event_id)
);
CREATE INDEX IF NOT EXISTS answers_by_conversation ON answers (entity, conversation, answered_at);
"""


class SqliteAnswerLog:
    """`AnswerLog` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA, synchronous_normal=True)
        self._db.execute("DELETE FROM answers WHERE answered_at < ?", (time.time() - RETENTION_S,))

    def record(self, answer: AnswerRecord) -> None:
        """Remember (or refresh) an answer; the newest answer of a conversation is the one an edit may change."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    answer.entity,
                    answer.source_event_id,
                    answer.room_id,
                    answer.conversation,
                    answer.thread_root,
                    answer.requester_id,
                    answer.response_event_id,
                    time.time(),
                ),
            )

    def for_question(self, entity: str, source_event_id: str) -> AnswerRecord | None:
        """The answer `entity` gave to `source_event_id`, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT entity, source_event_id, room_id, conversation, thread_root, requester_id, response_event_id"
                " FROM answers WHERE entity = ? AND source_event_id = ?",
                (entity, source_event_id),
            ).fetchone()
        return AnswerRecord(*row) if row else None

    def latest(self, entity: str, conversation: str) -> AnswerRecord | None:
        """The newest answer of `entity` in a conversation."""
        with self._lock:
            row = self._db.execute(
                "SELECT entity, source_event_id, room_id, conversation, thread_root, requester_id, response_event_id"
                " FROM answers WHERE entity = ? AND conversation = ? ORDER BY answered_at DESC LIMIT 1",
                (entity, conversation),
            ).fetchone()
        return AnswerRecord(*row) if row else None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
