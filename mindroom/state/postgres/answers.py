"""Answered questions in PostgreSQL: the recent ones read into memory under the lock, every change written through."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from mindroom.state.answers import RETENTION_S, AnswerRecord
from mindroom.state.postgres.connection import StateConnection

__all__ = ["PostgresAnswerLog"]

_COLUMNS = "entity, source_event_id, room_id, conversation, thread_root, requester_id, response_event_id"


class PostgresAnswerLog:
    """`AnswerLog` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str], tuple[float, AnswerRecord]] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read the answers still kept."""
        rows = conn.execute(
            f"SELECT {_COLUMNS}, answered_at FROM mindroom.answers WHERE answered_at >= %s",  # noqa: S608
            (time.time() - RETENTION_S,),
        ).fetchall()
        with self._lock:
            for *fields, answered_at in rows:
                record = AnswerRecord(*fields)
                self._answers[(record.entity, record.source_event_id)] = (answered_at, record)

    def record(self, answer: AnswerRecord) -> None:
        """Remember (or refresh) an answer."""
        now = time.time()
        with self._lock:
            self._answers[(answer.entity, answer.source_event_id)] = (now, answer)
        self._conn.write(
            f"INSERT INTO mindroom.answers ({_COLUMNS}, answered_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"  # noqa: S608
            " ON CONFLICT (entity, source_event_id) DO UPDATE SET room_id = EXCLUDED.room_id,"
            " conversation = EXCLUDED.conversation, thread_root = EXCLUDED.thread_root,"
            " requester_id = EXCLUDED.requester_id, response_event_id = EXCLUDED.response_event_id,"
            " answered_at = EXCLUDED.answered_at",
            (
                answer.entity,
                answer.source_event_id,
                answer.room_id,
                answer.conversation,
                answer.thread_root,
                answer.requester_id,
                answer.response_event_id,
                now,
            ),
        )

    def for_question(self, entity: str, source_event_id: str) -> AnswerRecord | None:
        """The answer `entity` gave to `source_event_id`, if any."""
        with self._lock:
            found = self._answers.get((entity, source_event_id))
        return found[1] if found else None

    def latest(self, entity: str, conversation: str) -> AnswerRecord | None:
        """The newest answer of `entity` in a conversation."""
        with self._lock:
            matching = [
                item
                for item in self._answers.values()
                if item[1].entity == entity and item[1].conversation == conversation
            ]
        return max(matching, key=lambda item: item[0])[1] if matching else None

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
