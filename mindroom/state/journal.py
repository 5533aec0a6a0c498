"""The turn journal: the daemon's record of its turns, as one interface with two implementations.

- which events each entity has handled (dedup across restarts), and the ones still in progress,
  kept with their content so a turn cut short by a crash is finished after the restart;
- streamed answers in progress, so one cut short is marked as interrupted after the restart.

`sqlite.journal.SqliteTurnJournal` keeps it in a file under the data directory,
`postgres.journal.PostgresTurnJournal` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["PENDING_MAX_AGE_S", "RETENTION_S", "OpenAnswer", "PendingEvent", "TurnJournal"]

RETENTION_S = 30 * 24 * 3600
"""How long a handled event is remembered (an event older than this is never delivered again)."""
PENDING_MAX_AGE_S = 24 * 3600
"""How old an unfinished turn may be and still be finished after a restart."""


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event whose turn had started when the daemon stopped."""

    event_id: str
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OpenAnswer:
    """A streamed answer that had not finished when the daemon stopped (its id unknown if the send was cut)."""

    txn_id: str
    response_event_id: str | None
    room_id: str
    source_event_id: str
    thread_root: str | None


class TurnJournal(Protocol):
    """Persistent dedup records, unfinished turns and unfinished streamed answers."""

    def claim(self, entity: str, event_id: str, event: dict[str, Any] | None = None) -> bool:
        """Record that `entity` handles `event_id`; False if it already did (now or before a restart), or when
        this daemon cannot show that it still holds the state's lock (another may answer: this one must not).

        With `event`, the claim stays pending (content kept) until `complete`, so a crash mid-turn
        leaves it for `pending` to return after the restart.
        """

    def complete(self, entity: str, event_id: str) -> None:
        """The turn for `event_id` is over (answered, declined or dropped)."""

    def holds_lock(self) -> bool:
        """True while this daemon can show it still holds the state's lock, so an answer may go out (a local
        check, no round trip: asked before every send of an answer)."""

    def seen(self, entity: str, event_id: str) -> bool:
        """True if `entity` already claimed `event_id`."""

    def pending(self, entity: str) -> list[PendingEvent]:
        """Turns of `entity` that started but never completed (recent ones only), oldest first."""

    def begin_answer(
        self, entity: str, room_id: str, txn_id: str, source_event_id: str, thread_root: str | None
    ) -> None:
        """A streamed answer is about to be sent with `txn_id` (recorded first, so a crash cannot hide it)."""

    def answer_sent(self, txn_id: str, response_event_id: str) -> None:
        """The streamed answer's first message exists as `response_event_id`."""

    def end_answer(self, response_event_id: str) -> None:
        """The streamed answer is final (or was marked interrupted)."""

    def drop_answer(self, txn_id: str) -> None:
        """Forget an open answer by its transaction id."""

    def open_answers(self, entity: str) -> list[OpenAnswer]:
        """Streamed answers of `entity` that never finished."""

    def close(self) -> None:
        """Release what the journal holds of its own (the backend closes shared connections)."""
