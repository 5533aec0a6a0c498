"""`SlidingWindow`: at most N events per key within the last T seconds (hook messages, bot-to-bot turns)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable

__all__ = ["SlidingWindow"]

_MAX_KEYS = 10_000


class SlidingWindow:
    """Counts events per key over a sliding window; `allow(key)` records one and says whether it fits."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self._events: dict[Hashable, deque[float]] = {}

    def allow(self, key: Hashable) -> bool:
        """Record an event for `key` unless `limit` events already happened within the window."""
        now = time.monotonic()
        window = self._events.get(key)
        if window is None:
            if len(self._events) >= _MAX_KEYS:
                self._forget_idle(now)
            window = self._events[key] = deque()
        while window and now - window[0] > self.window_s:
            window.popleft()
        if len(window) >= self.limit:
            return False
        window.append(now)
        return True

    def _forget_idle(self, now: float) -> None:
        """Drop keys with nothing in the window, so a stream of new keys cannot grow memory without end."""
        for key in [key for key, window in self._events.items() if not window or now - window[-1] > self.window_s]:
            del self._events[key]
