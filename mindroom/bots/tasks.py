"""`TaskOwner`: every background task has an owner that guards it, and cancels and awaits it on stop."""

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

    def spawn(self, work: Awaitable[None], what: str) -> asyncio.Task[None]:
        """Run `work` as an owned task; an exception it raises is logged with `what`, never raised."""
        task = asyncio.ensure_future(self._guarded(work, what))
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

    async def cancel_all(self) -> None:
        """Cancel every task and wait until each has ended."""
        tasks = self.running
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
