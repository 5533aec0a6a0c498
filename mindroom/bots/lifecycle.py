"""The two records a turn keeps in the journal, each owned by a context manager so no path can forget one.

- `claimed`: the question is claimed on entry; a Matrix event is kept with its claim as a pending turn and
  completed on exit, however the turn ends, unless shutdown cancelled it, or its answer was refused because
  this daemon could not show it still holds the state (`StateFencedError`): then it stays pending for the
  daemon that does. A question with nothing to keep (an API request, a hand-off) is only recorded as taken.
- `open_answer`: a streamed answer's record, begun just before its first message is sent and ended when
  the answer is final. Every way out of the answer that is not an exception ends it; an exception (the
  stand-in for a crash, or shutdown cutting the answer short) leaves it, so the next start marks the
  message as interrupted (`mindroom.bots.recovery`) and then drops the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
from collections.abc import Iterator
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent
from mindroom.state.errors import StateFencedError
from mindroom.state.journal import TurnJournal

__all__ = ["OpenAnswer", "claimed", "claimed_turn", "open_answer", "stable_correlation_id"]


def stable_correlation_id(event_id: str) -> str:
    """The correlation id of one inbound event: unique to it, and the same when a crashed turn is replayed."""
    return hashlib.sha256(event_id.encode()).hexdigest()[:32]


logger = get_logger(__name__)


@contextlib.contextmanager
def claimed(
    journal: TurnJournal, entity: str, event_id: str, kept: dict[str, Any] | None = None, *, replay: bool = False
) -> Iterator[bool]:
    """Claim `event_id` as `entity`'s turn; yields False (and keeps nothing) when it was claimed before.

    `kept` (a Matrix event) stays with the claim until the turn completes, so a crash mid-turn leaves it for
    the next start; `replay` is that next start's run of it: claimed already, it is only completed. Without
    `kept` the claim is a record that the turn was taken (an API request, a hand-off, an entity observing a
    message): nothing is pending, so there is nothing to complete.
    """
    if not replay and not journal.claim(entity, event_id, kept):
        yield False
        return
    if kept is None and not replay:
        yield True
        return
    try:
        yield True
    except asyncio.CancelledError:
        raise  # shutdown past its grace: left pending, so the next start finishes the turn
    except StateFencedError:
        # Left pending too: the daemon holding the state now (a standby, or this one once it shows the lock
        # again and restarts) finishes the turn; this one sent nothing of it.
        logger.warning("turn left unanswered: the state lock could not be shown", agent=entity, event_id=event_id)
        return
    except BaseException:
        journal.complete(entity, event_id)
        raise
    journal.complete(entity, event_id)


def claimed_turn(
    journal: TurnJournal, entity: str, event: MatrixEvent, *, replay: bool = False
) -> contextlib.AbstractContextManager[bool]:
    """`claimed` for a Matrix event, kept with its claim until the turn completes."""
    return claimed(journal, entity, event.event_id, dataclasses.asdict(event), replay=replay)


class OpenAnswer:
    """One streamed answer's journal record: `begin` before its first send, `sent` once it exists, `end` when final."""

    def __init__(
        self, journal: TurnJournal, entity: str, room_id: str, source_event_id: str, thread_root: str | None
    ) -> None:
        self._journal = journal
        self._entity = entity
        self._room_id = room_id
        self._source_event_id = source_event_id
        self._thread_root = thread_root
        self._txn_id: str | None = None
        self._event_id: str | None = None

    @property
    def is_open(self) -> bool:
        """True between `begin` and `end`."""
        return self._txn_id is not None

    @property
    def event_id(self) -> str | None:
        """The message the answer is shown in so far (None before anything was shown)."""
        return self._event_id

    def begin(self, txn_id: str) -> None:
        """The answer's first message is about to be sent with `txn_id` (recorded first, so a crash cannot hide it)."""
        self._journal.begin_answer(self._entity, self._room_id, txn_id, self._source_event_id, self._thread_root)
        self._txn_id = txn_id

    def sent(self, response_event_id: str) -> None:
        """The first message exists as `response_event_id`."""
        self._event_id = response_event_id
        if self._txn_id is not None:
            self._journal.answer_sent(self._txn_id, response_event_id)

    def shown_in(self, event_id: str) -> None:
        """The answer is shown by editing an earlier message (an edited question's): nothing new to record."""
        self._event_id = event_id

    def end(self) -> None:
        """The answer is final (delivered, replaced by an error, or removed); ending twice does nothing."""
        txn_id, self._txn_id = self._txn_id, None
        if txn_id is not None:
            self._journal.drop_answer(txn_id)


@contextlib.contextmanager
def open_answer(
    journal: TurnJournal, entity: str, room_id: str, source_event_id: str, thread_root: str | None
) -> Iterator[OpenAnswer]:
    """The scope of one answer that may stream: its record, if begun, is ended on every normal way out.

    An exception leaves a begun record in place: the message then still shows a cut-off text, and the
    next start edits it to say the answer was interrupted.
    """
    answer = OpenAnswer(journal, entity, room_id, source_event_id, thread_root)
    yield answer
    answer.end()
