"""The turn journal: the daemon's record of its turns, as one interface with two implementations.

- which events each entity has handled (dedup across restarts), and the ones still in progress,
  kept with their content so a turn cut short by a crash is finished after the restart;
- streamed answers in progress, so one cut short is marked as interrupted after the restart.

An event is kept as `kept_event` makes it: the text a person wrote, with pasted secrets redacted (as the
model gets it; a turn finished after a restart runs on that text).

`sqlite.journal.SqliteTurnJournal` keeps it in a file under the data directory,
`postgres.journal.PostgresTurnJournal` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mindroom.logging_config import redact_message

__all__ = ["PENDING_MAX_AGE_S", "RETENTION_S", "OpenAnswer", "PendingEvent", "TurnJournal", "kept_event"]

RETENTION_S = 30 * 24 * 3600
"""How long a handled event is remembered (an event older than this is never delivered again)."""
PENDING_MAX_AGE_S = 24 * 3600
"""How old an unfinished turn may be and still be finished after a restart."""
_TEXT_FIELDS = frozenset({"body", "formatted_body"})
_MAX_DEPTH = 4  # `content`, `m.new_content` of an edit, and room to spare; deeper objects are kept as they are


def kept_event(event: dict[str, Any]) -> dict[str, Any]:
    """`event` as the journal keeps it: `body` and `formatted_body` in its content (an edit's new content too)
    redacted (`redact_message`); ids, relations and everything else as they were."""
    kept = dict(event)
    for key in ("content", "prev_content"):
        if isinstance(kept.get(key), dict):
            kept[key] = _redacted_content(kept[key], 0)
    return kept


def _redacted_content(content: dict[str, Any], depth: int) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in content.items():
        if key in _TEXT_FIELDS and isinstance(value, str):
            kept[key] = redact_message(value)
        elif isinstance(value, dict) and depth < _MAX_DEPTH:
            kept[key] = _redacted_content(value, depth + 1)
        else:
            kept[key] = value
    return kept


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
