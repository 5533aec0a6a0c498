"""`TaskOwner`: every background task has an owner that guards it, and cancels and awaits it on stop.

A foundation (every package may import it): the invite answers of an appservice inbox, the session
store's writes, the memory extractions, the bots' turns and the daemon's notices are all held the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from mindroom.logging_config import get_logger

__all__ = ["TaskOwner"]

logger = get_logger(__name__)


class TaskOwner:
    """Spawns guarded tasks (their errors are logged, never lost), tracks them, and ends them on request."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Awaitable[None], what: str, *, name: str | None = None) -> asyncio.Task[None]:
        """Run `work` as an owned task (named `name`); an exception it raises is logged with `what`, never raised."""
        task = asyncio.get_running_loop().create_task(self._guarded(work, what), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(self, work: Awaitable[None], what: str) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("background task failed", owner=self.owner, what=what)

    @property
    def running(self) -> set[asyncio.Task[None]]:
        """The tasks still running (a copy)."""
        return set(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    async def settled(self) -> None:
        """Wait until no task runs, those spawned meanwhile included (none is cancelled)."""
        while self._tasks:
            await asyncio.gather(*self.running, return_exceptions=True)

    async def cancel_all(self, grace_s: float = 0.0) -> None:
        """Give the tasks `grace_s` to finish, cancel those still running, and wait until each has ended."""
        tasks = self.running
        if tasks and grace_s > 0:
            _done, tasks = await asyncio.wait(tasks, timeout=grace_s)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
