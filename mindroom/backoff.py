"""`Backoff`: how long to wait before trying again after failures in a row, growing exponentially to a cap.

A foundation: the homeserver's sync, sends, catch-up and watch (`matrix/`), the state database's reconnects
(`state/postgres`), MCP server restarts (`tool_system/mcp`) and model calls (`ai/`) all wait this way, each
with its own numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff", "Retries"]

_MAX_STEPS = 64
"""Growth steps counted at most: a long outage keeps its waits at the cap without counting further."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Wait `first_s` after the first failure, `factor` times longer after each further one, never over `max_s`.

    `jitter` is the range of a random factor each wait is multiplied by (after the cap), so clients that failed
    together do not all try again at the same instant; `(1.0, 1.0)`, the default, waits exactly.
    """

    first_s: float
    max_s: float
    factor: float = 2.0
    jitter: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        low, high = self.jitter
        if not (0 < self.first_s <= self.max_s and self.factor >= 1 and 0 < low <= high):
            msg = f"a backoff needs 0 < first_s <= max_s, factor >= 1 and 0 < jitter low <= high, not {self!r}"
            raise ValueError(msg)

    def delay(self, failures: int) -> float:
        """The wait after `failures` failures in a row (1 for the first; fewer count as 1)."""
        delay = self.first_s
        for _ in range(min(max(0, failures - 1), _MAX_STEPS)):
            delay = min(self.max_s, delay * self.factor)  # capped at each step, so a large factor cannot overflow
            if delay == self.max_s:
                break
        low, high = self.jitter
        return delay if low == high == 1.0 else delay * random.uniform(low, high)

    def retries(self) -> Retries:
        """A fresh run of failures under this backoff."""
        return Retries(self)


class Retries:
    """A run of failures under one `Backoff`: `next_wait()` counts a failure and gives its wait; `reset()` ends it."""

    __slots__ = ("backoff", "failures")

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.failures = 0

    def next_wait(self) -> float:
        """Count one more failure and return the wait before the next try."""
        self.failures += 1
        return self.backoff.delay(self.failures)

    def reset(self) -> None:
        """A try succeeded: the next failure waits `first_s` again."""
        self.failures = 0
