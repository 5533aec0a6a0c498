"""Fair, bounded admission of turns: at most N run at once per agent, rooms take turns for free slots.

A plain semaphore is first-come first-served, so one room flooding an agent would make every other
room wait behind its whole backlog. Here each room has its own queue and free slots go round-robin
over the rooms that are waiting; a room's queue is bounded, so a flood cannot grow memory without end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator

from mindroom.errors import MindroomError

__all__ = ["FairSlots", "QueueFullError"]


class QueueFullError(MindroomError):
    """A room already has as many turns waiting as it may."""


class FairSlots:
    """`async with slots.slot(room_id): ...` runs at most `limit` bodies at once, rooms served in turn."""

    def __init__(self, limit: int, max_waiting_per_room: int = 200) -> None:
        self.limit = limit
        self.max_waiting_per_room = max_waiting_per_room
        self._running = 0
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def running(self) -> int:
        """Bodies running now."""
        return self._running

    def waiting(self, room_id: str | None = None) -> int:
        """Turns waiting (in one room, or in all)."""
        if room_id is not None:
            return len(self._waiting.get(room_id, ()))
        return sum(len(queue) for queue in self._waiting.values())

    @contextlib.asynccontextmanager
    async def slot(self, room_id: str) -> AsyncIterator[None]:
        """Wait for a slot (fairly across rooms), hold it for the body."""
        if self._running < self.limit and not self._waiting:
            self._running += 1
        else:
            queue = self._waiting.setdefault(room_id, deque())
            if len(queue) >= self.max_waiting_per_room:
                raise QueueFullError(room_id)
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            queue.append(future)
            try:
                await future
            except BaseException:
                if future.done() and not future.cancelled():
                    self._release()  # granted just as we were cancelled: pass the slot on
                else:
                    self._forget(room_id, future)
                raise
        try:
            yield
        finally:
            self._release()

    def _forget(self, room_id: str, future: asyncio.Future[None]) -> None:
        queue = self._waiting.get(room_id)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(future)
            if not queue:
                del self._waiting[room_id]

    def _release(self) -> None:
        """Hand the freed slot to the next waiting room (round-robin), or free it."""
        while self._waiting:
            room_id, queue = next(iter(self._waiting.items()))
            future = queue.popleft()
            if queue:
                self._waiting.move_to_end(room_id)
            else:
                del self._waiting[room_id]
            if not future.done():
                future.set_result(None)
                return  # the slot passes straight to the waiter: `_running` is unchanged
        self._running -= 1
