"""`TurnLog`: the last answers the daemon gave, for operators (the dashboard's "last turns").

Each record says who answered what kind of message, how long it took, how it ended and which hooks ran.
It is memory only and bounded: an operator's view of now, not an audit trail.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from mindroom.hooks.trace import hook_trace
from mindroom.hooks.transport import MessageEnvelope

__all__ = ["TURN_LOG_SIZE", "TurnLog", "TurnNote", "TurnRecord", "noting_turn"]

TURN_LOG_SIZE = 100


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One answer: the agent, where the message came from, when, how long, how it ended, the hooks called."""

    correlation_id: str
    agent: str
    source_kind: str
    room_id: str
    started_at: float
    latency_s: float
    outcome: str
    """`answered`, or why not: `cancelled`, `failed`, `suppressed_by_hook`..."""
    hooks: tuple[str, ...]


class TurnLog:
    """The last `size` answers, newest last; `total` counts every answer since the start."""

    def __init__(self, size: int = TURN_LOG_SIZE) -> None:
        self._records: deque[TurnRecord] = deque(maxlen=size)
        self.total = 0

    def add(self, record: TurnRecord) -> None:
        """Keep one more answer (the oldest falls out when full)."""
        self._records.append(record)
        self.total += 1

    def recent(self, limit: int | None = None) -> list[TurnRecord]:
        """The last `limit` answers (all kept when None), newest first."""
        records = list(self._records)[::-1]
        return records if limit is None else records[:limit]

    @staticmethod
    def now() -> float:
        """Wall-clock time, as records keep it."""
        return time.time()


class TurnNote:
    """How the turn being noted ended (set by the turn; `failed` until it says otherwise)."""

    __slots__ = ("hooks", "outcome")

    def __init__(self, hooks: list[str]) -> None:
        self.outcome = "failed"
        self.hooks = hooks


@contextlib.contextmanager
def noting_turn(log: TurnLog | None, correlation_id: str, agent: str, envelope: MessageEnvelope) -> Iterator[TurnNote]:
    """Note the answer made in this block in `log` (nothing when None), with the hooks it called."""
    started = TurnLog.now()
    with hook_trace() as hooks:
        note = TurnNote(hooks)
        try:
            yield note
        except asyncio.CancelledError:
            note.outcome = "cancelled"
            raise
        finally:
            if log is not None:
                log.add(
                    TurnRecord(
                        correlation_id,
                        agent,
                        envelope.source_kind,
                        envelope.room_id,
                        started,
                        TurnLog.now() - started,
                        note.outcome,
                        tuple(hooks),
                    )
                )
