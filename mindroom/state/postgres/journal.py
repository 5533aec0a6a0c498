"""The turn journal in PostgreSQL: read into memory under the lock, every change written through `StateConnection`.

Answers come from memory (the lock makes this daemon the only writer), so `claim` costs what a dict
lookup costs and the event loop never waits on the network.

A claim is where this daemon decides to answer, so it is refused (returns False) while the daemon cannot
show that it still holds the state's lock (`StateConnection.holds_lock`): after a database outage a
standby may hold it already. Each claim's row carries the fence generation it was made under, and is
written only while that generation is the latest (see `connection`).

Memory holds the handled events of the last `MIRROR_S` seconds and every pending one. That covers every
claim a run can make: ingress drops events older than the run's start before claiming them, and events
come again only from the stored sync position, which lags by seconds. Older rows stay in the database
until the journal's retention drops them, as in SQLite.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

import psycopg

from mindroom.logging_config import get_logger
from mindroom.state.journal import PENDING_MAX_AGE_S, RETENTION_S, OpenAnswer, PendingEvent, kept_event
from mindroom.state.postgres.connection import StateConnection

__all__ = ["MIRROR_S", "PostgresTurnJournal"]

logger = get_logger(__name__)

MIRROR_S = 2 * 24 * 3600
_PRUNE_EVERY = 1000

_Key = tuple[str, str]


class _Answer:
    __slots__ = ("answer", "entity")

    def __init__(self, entity: str, answer: OpenAnswer) -> None:
        self.entity = entity
        self.answer = answer


class PostgresTurnJournal:
    """`TurnJournal` on PostgreSQL (see the module docstring for what is kept in memory)."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._handled: OrderedDict[_Key, float] = OrderedDict()
        self._pending: dict[_Key, tuple[float, str]] = {}
        self._answers: dict[str, _Answer] = {}
        self._claims = 0

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: drop expired rows, read the rest into memory."""
        now = time.time()
        conn.execute("DELETE FROM mindroom.handled_events WHERE handled_at < %s", (now - RETENTION_S,))
        rows = conn.execute(
            "SELECT entity, event_id, handled_at, pending, event_json FROM mindroom.handled_events"
            " WHERE handled_at >= %s OR pending ORDER BY handled_at",
            (now - MIRROR_S,),
        ).fetchall()
        answers = conn.execute(
            "SELECT txn_id, response_event_id, entity, room_id, source_event_id, thread_root"
            " FROM mindroom.open_answers ORDER BY started_at"
        ).fetchall()
        with self._lock:
            for entity, event_id, handled_at, pending, payload in rows:
                self._handled[(entity, event_id)] = handled_at
                if pending and payload:
                    self._pending[(entity, event_id)] = (handled_at, payload)
            for txn_id, response_event_id, entity, room_id, source_event_id, thread_root in answers:
                answer = OpenAnswer(txn_id, response_event_id, room_id, source_event_id, thread_root)
                self._answers[txn_id] = _Answer(entity, answer)

    def _prune(self, now: float) -> None:
        horizon = now - MIRROR_S
        while self._handled:
            key, handled_at = next(iter(self._handled.items()))
            if handled_at >= horizon:
                return
            del self._handled[key]

    # -- handled events ------------------------------------------------------------------------------
    def claim(self, entity: str, event_id: str, event: dict[str, Any] | None = None) -> bool:
        """Record that `entity` handles `event_id`; False if it already did (now or before a restart), or
        while this daemon cannot show it still holds the state's lock."""
        if not self._conn.holds_lock():
            logger.warning(
                "not answering: this daemon cannot show it still holds the state lock",
                agent=entity,
                event_id=event_id,
                lost=self._conn.lost,
            )
            return False
        key = (entity, event_id)
        now = time.time()
        payload = json.dumps(kept_event(event)) if event is not None else None
        with self._lock:
            if key in self._handled:
                return False
            self._handled[key] = now
            if payload is not None:
                self._pending[key] = (now, payload)
            self._claims += 1
            if self._claims % _PRUNE_EVERY == 0:
                self._prune(now)
        self._conn.write(
            "INSERT INTO mindroom.handled_events (entity, event_id, handled_at, pending, event_json, generation)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (entity, event_id) DO NOTHING",
            (entity, event_id, now, payload is not None, payload, self._conn.generation),
        )
        return True

    def complete(self, entity: str, event_id: str) -> None:
        """The turn for `event_id` is over (answered, declined or dropped)."""
        with self._lock:
            self._pending.pop((entity, event_id), None)
        self._conn.write(
            "UPDATE mindroom.handled_events SET pending = FALSE, event_json = NULL WHERE entity = %s AND event_id = %s",
            (entity, event_id),
        )

    def holds_lock(self) -> bool:
        """True while the writer session can show it holds the lock (`StateConnection.holds_lock`: no round trip)."""
        return self._conn.holds_lock()

    def seen(self, entity: str, event_id: str) -> bool:
        """True if `entity` claimed `event_id` (within the mirrored window)."""
        with self._lock:
            return (entity, event_id) in self._handled

    def pending(self, entity: str) -> list[PendingEvent]:
        """Turns of `entity` that started but never completed (recent ones only), oldest first."""
        horizon = time.time() - PENDING_MAX_AGE_S
        with self._lock:
            rows = sorted(
                (handled_at, event_id, payload)
                for (owner, event_id), (handled_at, payload) in self._pending.items()
                if owner == entity and handled_at >= horizon
            )
        return [PendingEvent(event_id, json.loads(payload)) for _at, event_id, payload in rows]

    # -- open streamed answers -------------------------------------------------------------------------
    def begin_answer(
        self, entity: str, room_id: str, txn_id: str, source_event_id: str, thread_root: str | None
    ) -> None:
        """A streamed answer is about to be sent with `txn_id` (recorded first, so a crash cannot hide it)."""
        with self._lock:
            self._answers[txn_id] = _Answer(entity, OpenAnswer(txn_id, None, room_id, source_event_id, thread_root))
        self._conn.write(
            "INSERT INTO mindroom.open_answers VALUES (%s, NULL, %s, %s, %s, %s, %s) ON CONFLICT (txn_id) DO UPDATE"
            " SET response_event_id = NULL, entity = EXCLUDED.entity, room_id = EXCLUDED.room_id,"
            " source_event_id = EXCLUDED.source_event_id, thread_root = EXCLUDED.thread_root,"
            " started_at = EXCLUDED.started_at",
            (txn_id, entity, room_id, source_event_id, thread_root, time.time()),
        )

    def answer_sent(self, txn_id: str, response_event_id: str) -> None:
        """The streamed answer's first message exists as `response_event_id`."""
        with self._lock:
            found = self._answers.get(txn_id)
            if found is not None:
                old = found.answer
                found.answer = OpenAnswer(
                    old.txn_id, response_event_id, old.room_id, old.source_event_id, old.thread_root
                )
        self._conn.write(
            "UPDATE mindroom.open_answers SET response_event_id = %s WHERE txn_id = %s", (response_event_id, txn_id)
        )

    def end_answer(self, response_event_id: str) -> None:
        """The streamed answer is final (or was marked interrupted)."""
        with self._lock:
            for txn_id in [t for t, a in self._answers.items() if a.answer.response_event_id == response_event_id]:
                del self._answers[txn_id]
        self._conn.write("DELETE FROM mindroom.open_answers WHERE response_event_id = %s", (response_event_id,))

    def drop_answer(self, txn_id: str) -> None:
        """Forget an open answer by its transaction id."""
        with self._lock:
            self._answers.pop(txn_id, None)
        self._conn.write("DELETE FROM mindroom.open_answers WHERE txn_id = %s", (txn_id,))

    def open_answers(self, entity: str) -> list[OpenAnswer]:
        """Streamed answers of `entity` that never finished."""
        with self._lock:
            return [found.answer for found in self._answers.values() if found.entity == entity]

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
