"""`PostgresState`: the daemon's state in one PostgreSQL database, locked by an advisory lock of its writer session.

Taking the lock from a holder that did not release it (it died, or lost its connection and may not know
yet) is fenced: the new holder is the next generation, and it waits out the old one's lease before it
starts, since the old one stops answering at the latest when its lease runs out (see `connection`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg

from mindroom.logging_config import get_logger
from mindroom.state.backend import StateBackend, StateStores
from mindroom.state.holder import LockHolder
from mindroom.state.postgres.answers import PostgresAnswerLog
from mindroom.state.postgres.approvals import PostgresApprovalStore
from mindroom.state.postgres.connection import DEFAULT_LEASE_S, StateConnection
from mindroom.state.postgres.connections import PostgresConnectionStore
from mindroom.state.postgres.crypto import PostgresCryptoVault
from mindroom.state.postgres.grants import PostgresGrantStore
from mindroom.state.postgres.journal import PostgresTurnJournal
from mindroom.state.postgres.overrides import PostgresOverrideStore
from mindroom.state.postgres.positions import PostgresSnapshots, PostgresSyncTokens
from mindroom.state.postgres.rooms import PostgresRoomMemory
from mindroom.state.postgres.schedules import PostgresScheduleStore
from mindroom.state.postgres.schema import (
    LOCK_KEY,
    create_tables,
    end_own_stale_session,
    read_holder,
    write_holder,
)
from mindroom.state.postgres.usage import PostgresUsageStore

__all__ = ["PostgresState"]

logger = get_logger(__name__)


class PostgresState(StateBackend):
    """Every store in schema `mindroom` of one database; agno's sessions beside them (`mindroom.ai.sessions`)."""

    kind = "postgresql"

    def __init__(self, url: str, location: str, *, idle_check_s: float = 0.5, lease_s: float = DEFAULT_LEASE_S) -> None:
        super().__init__(location)
        self.url = url
        self.holder = LockHolder.this_process()
        self.connection = StateConnection(
            url,
            LOCK_KEY,
            on_lost=self._on_lost,
            reclaim=lambda conn: end_own_stale_session(conn, self.holder),
            relocked=lambda conn: write_holder(conn, self.holder),
            idle_check_s=idle_check_s,
            lease_s=lease_s,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost: asyncio.Event | None = None
        self._opened = False

    def _on_lost(self, reason: str) -> None:
        loop, lost = self._loop, self._lost
        if loop is not None and lost is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lost.set)

    async def _run(self, function: Any) -> Any:
        return await asyncio.wrap_future(self.connection.submit(function))

    async def open(self) -> None:
        """Connect the writer session (a standby does this before it waits for the lock)."""
        if self._opened:
            return
        self._loop = asyncio.get_running_loop()
        self._lost = asyncio.Event()
        await asyncio.to_thread(self.connection.open)
        self._opened = True

    async def try_lock(self) -> LockHolder | None:
        """Take the advisory lock if free, create missing tables and write this process as holder."""
        if self._locked:
            return None
        await self.open()

        def attempt(conn: psycopg.Connection[Any]) -> tuple[bool, LockHolder | None, bool]:
            if self.connection.try_lock(conn):
                create_tables(conn)
                released = self.connection.take_generation(conn)
                self.holder = LockHolder.this_process()
                write_holder(conn, self.holder)
                return True, None, released
            return False, read_holder(conn), True

        locked, holder, released = await self._run(attempt)
        if locked and not released:
            logger.info(
                "state lock taken from a holder that did not release it; waiting out its lease",
                generation=self.connection.generation,
                wait_s=self.connection.lease_s,
            )
            await asyncio.sleep(self.connection.lease_s)
        self._locked = locked
        return holder  # type: ignore[no-any-return]

    async def read_holder(self) -> LockHolder | None:
        """The holder row, while its session is connected."""
        await self.open()
        return await self._run(read_holder)  # type: ignore[no-any-return]

    async def _load_stores(self) -> StateStores:
        connection = self.connection
        journal = PostgresTurnJournal(connection)
        rooms = PostgresRoomMemory(connection)
        answers = PostgresAnswerLog(connection)
        approvals = PostgresApprovalStore(connection)
        grants = PostgresGrantStore(connection)
        schedules = PostgresScheduleStore(connection)
        tokens = PostgresSyncTokens(connection)
        overrides = PostgresOverrideStore(connection)
        connections = PostgresConnectionStore(connection)

        def load(conn: psycopg.Connection[Any]) -> None:
            journal.load(conn)
            rooms.load(conn)
            answers.load(conn)
            approvals.load(conn)
            grants.load(conn)
            schedules.load(conn)
            tokens.load_all(conn)
            overrides.load(conn)
            connections.load(conn)

        await self._run(load)
        return StateStores(
            journal=journal,
            rooms=rooms,
            answers=answers,
            approvals=approvals,
            schedules=schedules,
            snapshots=PostgresSnapshots(connection),
            grants=grants,
            sync_tokens=tokens,
            session_url=self.url,
            crypto=PostgresCryptoVault(connection, self.location),
            overrides=overrides,
            usage=PostgresUsageStore(connection),
            connections=connections,
        )

    async def wait_lost(self) -> str:
        """Returns when the writer session lost the lock to another daemon (the reason)."""
        await self.open()
        assert self._lost is not None
        await self._lost.wait()
        return self.connection.lost or "the state lock was lost"

    async def _release(self) -> None:
        if self._stores is not None:
            self._stores.close()  # first: whatever a store queues as it closes is applied before the connection ends
        if self._opened:
            await asyncio.to_thread(self.connection.close)
            self._opened = False
