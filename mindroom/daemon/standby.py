"""One active daemon per state: which state a daemon uses, and a standby that waits for it and takes over.

`mindroom run` opens the state (connections only), then either takes the lock at once (a second daemon
on the same state is refused, naming the holder) or, with `--standby`, prepares everything that needs
no lock (config, plugins, hook registry, the database session), waits for the lock, and starts the bots
the moment the active daemon is gone: its database session ends when it dies (PostgreSQL frees the
advisory lock), or the kernel drops its `flock` (SQLite).

A standby that took over continues the run it replaced: messages that arrived while no daemon was
running are newer than that run's start, so they are answered (the journal keeps each to one answer).
Its takeover is fenced by the state (see `mindroom.state.postgres.connection`): it becomes the next
generation, and when the old holder did not release the lock, it waits out that holder's lease first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from mindroom.config.environment import DaemonEnvironment
from mindroom.config.main import Config
from mindroom.logging_config import get_logger
from mindroom.state.backend import DEFAULT_LOCK_POLL_S, StateBackend
from mindroom.state.holder import LockHolder
from mindroom.state.location import open_state_backend

__all__ = ["Takeover", "daemon_state", "database_url", "wait_for_lock"]

logger = get_logger(__name__)


def database_url(environment: DaemonEnvironment, config: Config) -> str | None:
    """`MINDROOM_DATABASE_URL`, else `storage.database_url`, else None (SQLite under the data directory)."""
    return environment.database_url or config.storage.database_url


def daemon_state(environment: DaemonEnvironment, config: Config) -> StateBackend:
    """The state backend this daemon uses (not connected, not locked)."""
    return open_state_backend(environment.storage_root, database_url(environment, config))


class Takeover:
    """What a standby learned while waiting: whom it replaced, and when that run started."""

    def __init__(self) -> None:
        self.replaced: LockHolder | None = None
        self.waited_s = 0.0

    @property
    def run_since(self) -> float | None:
        """The start of the run this daemon continues (None when it replaced nobody: a fresh run)."""
        return self.replaced.since if self.replaced is not None else None


async def wait_for_lock(
    state: StateBackend, stop: asyncio.Event, *, poll_s: float = DEFAULT_LOCK_POLL_S
) -> Takeover | None:
    """Try the lock until it is ours (the takeover) or `stop` is set (None)."""
    takeover = Takeover()
    started = time.monotonic()
    announced = False
    while not stop.is_set():
        holder = await state.try_lock()
        if state.locked:
            takeover.waited_s = time.monotonic() - started
            if takeover.replaced is not None:
                logger.info(
                    "standby taking over",
                    location=state.location,
                    replaced=takeover.replaced.describe(),
                    waited_s=round(takeover.waited_s, 1),
                    run_since=takeover.run_since,
                )
            return takeover
        if holder is not None:
            takeover.replaced = holder
        if not announced:
            logger.info(
                "standby: waiting for the active daemon to stop",
                location=state.location,
                holder=holder.describe() if holder is not None else None,
            )
            announced = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), poll_s)
    return None
