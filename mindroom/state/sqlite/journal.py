"""`TurnJournal` in SQLite: `<data>/state/daemon.db` (transactions make every write atomic)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.private_files import open_private_database
from mindroom.state.journal import PENDING_MAX_AGE_S, RETENTION_S, OpenAnswer, PendingEvent, kept_event

__all__ = ["SqliteTurnJournal"]

logger = get_logger(__name__)

_OBSERVED_BATCH = 200
_OBSERVED_FLUSH_S = 2.0
"""Observed claims are written once this many wait, or the oldest waited this long (checked at each claim)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS handled_events (
    entity TEXT NOT NULL,
    event_id TEXT NOT NULL,
    handled_at REAL NOT NULL,
    pending INTEGER NOT NULL DEFAULT 0,
    event_json TEXT,
    PRIMARY KEY (entity, event_id)
);
CREATE INDEX IF NOT EXISTS handled_events_at ON handled_events (handled_at);
CREATE TABLE IF NOT EXISTS open_answers (
    txn_id TEXT PRIMARY KEY,
    response_event_id TEXT,
    entity TEXT NOT NULL,
    room_id TEXT NOT NULL,
    source_event_id TEXT NOT NULL,
    thread_root TEXT,
    started_at REAL NOT NULL
);
"""


class SqliteTurnJournal:
    """`TurnJournal` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._observed: dict[tuple[str, str], float] = {}
        """Claims without content (an entity that only observes a message), written in batches."""
        self._db = open_private_database(path)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()
        self._db.executescript(_SCHEMA)
        self._db.execute("DELETE FROM handled_events WHERE handled_at < ?", (time.time() - RETENTION_S,))

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def _migrate(self) -> None:
        """Bring a state file written by an earlier version up to the current schema."""
        handled = self._columns("handled_events")
        if handled and "pending" not in handled:
            self._db.execute("ALTER TABLE handled_events ADD COLUMN pending INTEGER NOT NULL DEFAULT 0")
            self._db.execute("ALTER TABLE handled_events ADD COLUMN event_json TEXT")
        answers = self._columns("open_answers")
        if answers and "txn_id" not in answers:
            # Only in-flight records live here; the older layout cannot name their transactions.
            self._db.execute("DROP TABLE open_answers")

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    # -- handled events ------------------------------------------------------------------------------
    def claim(self, entity: str, event_id: str, event: dict[str, Any] | None = None) -> bool:
        """Record that `entity` handles `event_id`; False if it already did (now or before a restart).

        With `event`, the claim stays pending (content kept) until `complete`, so a crash mid-turn
        leaves it for `pending` to return after the restart.
        """
        if event is None:
            return self._observe(entity, event_id)
        payload = json.dumps(kept_event(event))
        with self._lock:
            if (entity, event_id) in self._observed:
                return False
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO handled_events (entity, event_id, handled_at, pending, event_json)"
                " VALUES (?, ?, ?, 1, ?)",
                (entity, event_id, time.time(), payload),
            )
        return cursor.rowcount == 1

    def _observe(self, entity: str, event_id: str) -> bool:
        """A claim with nothing to keep: remembered at once, written with the next batch (every entity in a
        room claims each message it observes; one write each would cost more than all else they do with it)."""
        key = (entity, event_id)
        now = time.time()
        with self._lock:
            if key in self._observed or self._handled(key):
                return False
            self._observed[key] = now
            if len(self._observed) >= _OBSERVED_BATCH or now - next(iter(self._observed.values())) >= _OBSERVED_FLUSH_S:
                try:
                    self._flush()
                except sqlite3.Error as error:  # remembered all the same: the next batch writes them
                    logger.warning("observed claims not written yet", waiting=len(self._observed), error=str(error))
        return True

    def _handled(self, key: tuple[str, str]) -> bool:
        row = self._db.execute("SELECT 1 FROM handled_events WHERE entity = ? AND event_id = ?", key).fetchone()
        return row is not None

    def _flush(self) -> None:
        """Write the observed claims (call with `_lock` held)."""
        if not self._observed:
            return
        rows = [(entity, event_id, at) for (entity, event_id), at in self._observed.items()]
        self._db.execute("BEGIN")
        try:
            self._db.executemany(
                "INSERT OR IGNORE INTO handled_events (entity, event_id, handled_at) VALUES (?, ?, ?)", rows
            )
        except BaseException:
            self._db.execute("ROLLBACK")  # the claims stay remembered; the next batch writes them again
            raise
        self._db.execute("COMMIT")
        self._observed.clear()

    def complete(self, entity: str, event_id: str) -> None:
        """The turn for `event_id` is over (answered, declined or dropped)."""
        self._execute(
            "UPDATE handled_events SET pending = 0, event_json = NULL WHERE entity = ? AND event_id = ?",
            (entity, event_id),
        )

    def holds_lock(self) -> bool:
        """Always: the lock is the data directory's `flock`, held by an open file until the process ends."""
        return True

    def seen(self, entity: str, event_id: str) -> bool:
        """True if `entity` already claimed `event_id`."""
        with self._lock:
            return (entity, event_id) in self._observed or self._handled((entity, event_id))

    def pending(self, entity: str) -> list[PendingEvent]:
        """Turns of `entity` that started but never completed (recent ones only), oldest first."""
        rows = self._execute(
            "SELECT event_id, event_json FROM handled_events WHERE entity = ? AND pending = 1 AND handled_at >= ?"
            " ORDER BY handled_at",
            (entity, time.time() - PENDING_MAX_AGE_S),
        ).fetchall()
        return [PendingEvent(event_id, json.loads(payload)) for event_id, payload in rows if payload]

    # -- open streamed answers -------------------------------------------------------------------------
    def begin_answer(
        self, entity: str, room_id: str, txn_id: str, source_event_id: str, thread_root: str | None
    ) -> None:
        """A streamed answer is about to be sent with `txn_id` (recorded first, so a crash cannot hide it)."""
        self._execute(
            "INSERT OR REPLACE INTO open_answers VALUES (?, NULL, ?, ?, ?, ?, ?)",
            (txn_id, entity, room_id, source_event_id, thread_root, time.time()),
        )

    def answer_sent(self, txn_id: str, response_event_id: str) -> None:
        """The streamed answer's first message exists as `response_event_id`."""
        self._execute("UPDATE open_answers SET response_event_id = ? WHERE txn_id = ?", (response_event_id, txn_id))

    def end_answer(self, response_event_id: str) -> None:
        """The streamed answer is final (or was marked interrupted)."""
        self._execute("DELETE FROM open_answers WHERE response_event_id = ?", (response_event_id,))

    def drop_answer(self, txn_id: str) -> None:
        """Forget an open answer by its transaction id."""
        self._execute("DELETE FROM open_answers WHERE txn_id = ?", (txn_id,))

    def open_answers(self, entity: str) -> list[OpenAnswer]:
        """Streamed answers of `entity` that never finished."""
        rows = self._execute(
            "SELECT txn_id, response_event_id, room_id, source_event_id, thread_root FROM open_answers"
            " WHERE entity = ?",
            (entity,),
        ).fetchall()
        return [OpenAnswer(*row) for row in rows]

    def close(self) -> None:
        """Write what is still to be written, and close the database."""
        with self._lock:
            try:
                self._flush()
            finally:
                self._db.close()
