"""Bursts of edits of one question: while one edit is being answered, the newest edit waiting wins.

A person correcting a question edits it several times in a row, and answering every edit would run the
model for each. `EditBursts` remembers, per entity and question, the newest edit that arrived (in the
order the sync delivered them: an edit registers before its turn first waits on anything). An edit that
arrives while an earlier edit of the same question is still in its turn is part of a burst: once it has
the thread's slot it waits until `EDIT_QUIET_S` after its arrival, and gives way if a newer edit came
meanwhile. Every edit's turn checks again before delivering, so an answer that was already running when
a newer edit came is not delivered; the newest edit answers, editing the answer in place once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["EDIT_QUIET_S", "EditBursts", "EditWatch"]

EDIT_QUIET_S = 1.0
"""How long an edit of a burst waits for a newer one before it is answered."""


class EditBursts:
    """The newest edit of each question an entity is answering an edit of, by (entity, question event id)."""

    def __init__(self) -> None:
        self._newest: dict[tuple[str, str], str] = {}

    @contextlib.contextmanager
    def arrived(self, entity: str, question: str | None, edit_event_id: str) -> Iterator[EditWatch | None]:
        """Register an edit of `question` for as long as its turn runs (None: the turn answers no edit)."""
        if question is None:
            yield None
            return
        key = (entity, question)
        burst = key in self._newest
        self._newest[key] = edit_event_id
        try:
            yield EditWatch(self, key, edit_event_id, burst, time.monotonic())
        finally:
            if self._newest.get(key) == edit_event_id:
                del self._newest[key]

    def newest(self, key: tuple[str, str]) -> str | None:
        """The newest edit of a question still in its turn."""
        return self._newest.get(key)


@dataclass(frozen=True, slots=True)
class EditWatch:
    """One edit's view of its question's burst: whether a newer edit came, and the wait for a quiet moment."""

    bursts: EditBursts
    key: tuple[str, str]
    edit_event_id: str
    burst: bool
    """It arrived while an earlier edit of the same question was in its turn."""
    arrived_at: float

    def superseded(self) -> bool:
        """True once a newer edit of the same question has arrived."""
        return self.bursts.newest(self.key) != self.edit_event_id

    async def settled(self) -> bool:
        """In a burst, wait until `EDIT_QUIET_S` after this edit arrived; True when it is still the newest."""
        if self.burst and not self.superseded():
            await asyncio.sleep(max(0.0, self.arrived_at + EDIT_QUIET_S - time.monotonic()))
        return not self.superseded()
