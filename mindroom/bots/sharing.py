"""Work done once per event for every entity that sees it.

`SharedWork` runs asynchronous work once per key and hands its result to everyone who asks (each event's
media). `EventMemo` keeps what one live generation read from an event (its mentions), so the entities of
a room do not each read it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

__all__ = ["EventMemo", "SharedWork"]

_FORGET_AFTER_S = 120.0
_T = TypeVar("_T")


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


class EventMemo:
    """What was read from the newest `keep` events (or of them), each under the live generation that read it.

    Every entity in a room sees each of its events; what the event says does not depend on who reads it.
    A reading is reused only under the same generation (a reload may rename agents or change their names).
    """

    def __init__(self, keep: int = 512) -> None:
        self.keep = keep
        self._read: dict[Hashable, tuple[object, Any]] = {}

    def once(self, key: Hashable, generation: object, read: Callable[[], _T]) -> _T:
        """`read()` under `generation` for `key` (an event id, or one with what is read of it): computed by the
        first entity that asks."""
        hit = self._read.get(key)
        if hit is not None and hit[0] is generation:
            value: _T = hit[1]
            return value
        value = read()
        self._read[key] = (generation, value)
        if len(self._read) > self.keep:
            del self._read[next(iter(self._read))]
        return value
