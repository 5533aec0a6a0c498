"""`CircuitBreaker`: a hook that fails 5 times in a row is skipped for 5 minutes.

The breaker reads no clock itself: callers pass `now`, taken from this module's `now()`, so execution
and telemetry always agree on it (and tests replace that one function to move time).
"""

from __future__ import annotations

import time
from typing import Literal

__all__ = ["BREAKER_COOLDOWN_S", "BREAKER_THRESHOLD", "BreakerState", "CircuitBreaker", "now"]

BREAKER_THRESHOLD = 5
BREAKER_COOLDOWN_S = 300.0

BreakerState = Literal["closed", "open", "half-open"]


def now() -> float:
    """The breaker clock: monotonic seconds."""
    return time.monotonic()


class CircuitBreaker:
    """Consecutive failures of one hook, and until when it is skipped after the last trip."""

    __slots__ = ("consecutive", "open_until", "trips")

    def __init__(self) -> None:
        self.consecutive = 0
        self.open_until = 0.0
        self.trips = 0

    def allows(self, now: float) -> bool:
        """True unless the breaker is open at `now` (a cooled-down breaker lets one call through)."""
        return not (self.open_until and now < self.open_until)

    def success(self) -> None:
        """A call succeeded: forget earlier failures and close the breaker."""
        self.consecutive = 0
        self.open_until = 0.0

    def failure(self, now: float) -> bool:
        """Count a failure; returns True when this one trips the breaker open."""
        self.consecutive += 1
        # A call that was already running when the breaker opened does not trip it again.
        if self.consecutive >= BREAKER_THRESHOLD and self.open_until <= now:
            self.open_until = now + BREAKER_COOLDOWN_S
            self.trips += 1
            return True
        return False

    def state(self, now: float) -> BreakerState:
        """`open` while skipping, `half-open` after a cooldown until the next call succeeds, else `closed`."""
        if self.open_until and now < self.open_until:
            return "open"
        if self.consecutive and self.trips and self.open_until:
            return "half-open"
        return "closed"

    def reset(self) -> None:
        """Close the breaker and forget consecutive failures (the trip count is history and stays)."""
        self.consecutive = 0
        self.open_until = 0.0

    def __repr__(self) -> str:
        return f"CircuitBreaker(consecutive={self.consecutive}, open_until={self.open_until}, trips={self.trips})"
