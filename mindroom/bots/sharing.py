"""`SharedWork`: work done once per key, awaited by everyone who asks (each event's media, across entities)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["SharedWork"]

_FORGET_AFTER_S = 120.0


class SharedWork:
    """Runs the work for a key once; later callers for the same key get the same result for a while."""

    def __init__(self, keep_s: float = _FORGET_AFTER_S) -> None:
        self.keep_s = keep_s
        self._work: dict[str, asyncio.Future[Any]] = {}

    async def once(self, key: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """The result of `work()` for `key`: started by the first caller, awaited by the others."""
        future = self._work.get(key)
        if future is None:
            future = self._work[key] = asyncio.ensure_future(work())
            loop = asyncio.get_running_loop()
            future.add_done_callback(lambda _done: loop.call_later(self.keep_s, self._work.pop, key, None))
        # One caller being cancelled (shutdown, a stopped turn) must not cancel the work the others wait for.
        return await asyncio.shield(future)
