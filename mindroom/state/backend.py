"""The state backend: where a daemon's durable state lives, the lock that makes one daemon its only user, its stores.

    backend = open_state_backend(storage_root, database_url)   # mindroom.state.location
    await backend.open()              # connections only (a standby does this ahead of time)
    await backend.acquire(wait=False) # the lock, or StateLockedError naming the holder
    stores = await backend.open_stores()
    ...
    await backend.close()             # flushes the stores, then releases the lock

Two implementations: `sqlite.backend.SqliteState` (files under the data directory, an `flock` lock file;
the default) and `postgres.backend.PostgresState` (one database; an advisory lock held by the session that
also does every write). Each store is typed by its interface (`journal.TurnJournal`, ...), so the code
above the state never learns which backend it runs on.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass

from mindroom.logging_config import get_logger
from mindroom.state.answers import AnswerLog
from mindroom.state.approvals import ApprovalStore
from mindroom.state.connections import ConnectionStore
from mindroom.state.crypto import CryptoVault
from mindroom.state.errors import StateLockedError
from mindroom.state.grants import GrantStore
from mindroom.state.holder import LockHolder
from mindroom.state.journal import TurnJournal
from mindroom.state.overrides import OverrideStore
from mindroom.state.rooms import RoomMemory
from mindroom.state.schedules import ScheduleStore
from mindroom.state.snapshots import SnapshotStore
from mindroom.state.tokens import SyncTokens
from mindroom.state.usage import UsageStore

__all__ = ["DEFAULT_LOCK_POLL_S", "StateBackend", "StateStores"]

logger = get_logger(__name__)

DEFAULT_LOCK_POLL_S = 0.2
"""How often a waiting standby tries the lock: the takeover delay it adds at most."""


@dataclass(frozen=True, slots=True)
class StateStores:
    """Every store of one daemon's state, all in the same backend."""

    journal: TurnJournal
    rooms: RoomMemory
    answers: AnswerLog
    approvals: ApprovalStore
    schedules: ScheduleStore
    snapshots: SnapshotStore
    grants: GrantStore
    """Timed approvals: grants given on cards and `!auto_approve` windows."""
    sync_tokens: SyncTokens | None = None
    """Where the Matrix clients keep their sync positions; None: as files beside the bots' credentials."""
    session_url: str | None = None
    """The PostgreSQL database holding agno's agent sessions; None: SQLite files under the data directory."""
    crypto: CryptoVault | None = None
    """Where the bots' devices keep their crypto state; None: as files under the data directory."""
    overrides: OverrideStore | None = None
    """The settings changed from chat; None: none are kept (a state without the store)."""
    usage: UsageStore | None = None
    """What turns spent (tokens, cost) per person, agent, room and model; None: not kept."""
    connections: ConnectionStore | None = None
    """People's OAuth connections, sealed; None: not kept."""

    def close(self) -> None:
        """Close every store (each releases what it holds of its own; the backend closes shared connections)."""
        stores = (
            self.journal,
            self.rooms,
            self.answers,
            self.approvals,
            self.schedules,
            self.grants,
            self.overrides,
            self.usage,
            self.connections,
        )
        for store in stores:
            if store is not None:
                store.close()


class StateBackend(ABC):
    """One daemon's state: open, lock, stores, close. Subclasses say how and where."""

    kind: str
    """`sqlite` or `postgresql`."""

    def __init__(self, location: str) -> None:
        self.location = location
        """Where the state is, safe to show (a database URL without its password)."""
        self._stores: StateStores | None = None
        self._locked = False

    @property
    def locked(self) -> bool:
        """True while this process holds the state's lock."""
        return self._locked

    async def open(self) -> None:  # noqa: B027 - a backend with nothing to connect keeps this
        """Connect (nothing to do for files); the lock is not taken yet."""

    @abstractmethod
    async def try_lock(self) -> LockHolder | None:
        """Take the lock if it is free (None), else return who holds it (None fields unknown: a holder-less lock)."""

    @abstractmethod
    async def read_holder(self) -> LockHolder | None:
        """Who holds the lock now, as it wrote itself down; None when nobody wrote (or nobody holds it)."""

    @abstractmethod
    async def _load_stores(self) -> StateStores:
        """Open every store (called once the lock is held)."""

    @abstractmethod
    async def _release(self) -> None:
        """Flush and close the stores, then release the lock and every connection."""

    async def wait_lost(self) -> str:
        """Returns (with the reason) only if the lock is lost while held; a file lock never is."""
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def acquire(self, *, wait: bool = False, poll_s: float = DEFAULT_LOCK_POLL_S) -> None:
        """Take the lock; without `wait`, `StateLockedError` names the holder, with it, try until it is free."""
        announced = False
        while True:
            holder = await self.try_lock()
            if self._locked:
                logger.info("state lock taken", backend=self.kind, location=self.location)
                return
            if not wait:
                raise StateLockedError(self.location, holder)
            if not announced:
                logger.info(
                    "standby: waiting for the state lock",
                    backend=self.kind,
                    location=self.location,
                    holder=holder.describe() if holder is not None else None,
                )
                announced = True
            await asyncio.sleep(poll_s)

    async def open_stores(self) -> StateStores:
        """The stores (opened once, after the lock is held)."""
        if not self._locked:
            msg = "the state's stores open only under its lock"
            raise RuntimeError(msg)
        if self._stores is None:
            self._stores = await self._load_stores()
        return self._stores

    async def close(self) -> None:
        """Flush and close the stores, release the lock, close connections (safe to call twice)."""
        await self._release()
        self._stores = None
        self._locked = False
