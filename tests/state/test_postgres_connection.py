"""The PostgreSQL writer session: the loop never waits on the database, a dropped connection comes back with
its lock, and a lock taken by another daemon meanwhile stops this one's writes."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import psycopg
import pytest
import pytest_asyncio

from mindroom.state.errors import StateLockedError
from mindroom.state.location import open_state_backend
from mindroom.state.postgres.backend import PostgresState

pytestmark = [pytest.mark.postgres, pytest.mark.asyncio]


@pytest_asyncio.fixture
async def active(postgres_url: str, tmp_path) -> AsyncIterator[PostgresState]:
    state = open_state_backend(tmp_path, postgres_url)
    assert isinstance(state, PostgresState)
    await state.acquire()
    yield state
    await state.close()


def _writer_pid(state: PostgresState) -> int:
    return int(state.connection.call(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0]))


def _admin(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


async def test_postgres_connection_claims_never_wait_for_the_database(active: PostgresState, postgres_url: str):
    journal = (await active.open_stores()).journal
    backend = _writer_pid(active)
    applied = active.connection.writes
    os.kill(backend, signal.SIGSTOP)  # the database stops answering this session
    try:
        claimed = [journal.claim("agent", f"$e{i}", {"event_id": f"$e{i}"}) for i in range(2000)]
        repeated = journal.claim("agent", "$e7")
        written_meanwhile = active.connection.writes - applied
    finally:
        os.kill(backend, signal.SIGCONT)
    assert all(claimed) and repeated is False
    assert written_meanwhile == 0  # every claim was answered while none of them had reached the database
    assert await asyncio.to_thread(active.connection.flush, 30)
    assert _admin(postgres_url, "SELECT count(*) FROM mindroom.handled_events") == [(2000,)]


async def test_postgres_connection_comes_back_with_its_lock_after_a_drop(
    active: PostgresState, postgres_url: str, tmp_path
):
    rooms = (await active.open_stores()).rooms
    _admin(postgres_url, "SELECT pg_terminate_backend(%s)", (_writer_pid(active),))

    rooms.remember("router", "!after:hs", "created")
    assert await asyncio.to_thread(active.connection.flush, 30)

    assert _admin(postgres_url, "SELECT room_id FROM mindroom.rooms") == [("!after:hs",)]
    assert active.connection.lost is None
    other = open_state_backend(tmp_path, postgres_url)
    try:
        with pytest.raises(StateLockedError) as refused:
            await other.acquire()
        assert refused.value.holder is not None and refused.value.holder.pid == os.getpid()
    finally:
        await other.close()


async def test_postgres_connection_ends_its_own_stale_session_to_take_the_lock_back(
    active: PostgresState, postgres_url: str
):
    rooms = (await active.open_stores()).rooms
    old_pid = _writer_pid(active)

    def lose_touch(conn: psycopg.Connection) -> psycopg.Connection:
        # As after a network cut: this side gives the session up, the server still keeps it (and the lock).
        active.connection._conn = None
        return conn

    stale = active.connection.call(lose_touch)
    rooms.remember("router", "!after-the-cut:hs", "created")
    assert await asyncio.to_thread(active.connection.flush, 30)

    assert _admin(postgres_url, "SELECT room_id FROM mindroom.rooms") == [("!after-the-cut:hs",)]
    assert active.connection.lost is None and _writer_pid(active) != old_pid
    assert _admin(postgres_url, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (old_pid,)) == [(0,)]
    assert _admin(postgres_url, "SELECT backend_pid FROM mindroom.lock_holder") == [(_writer_pid(active),)]
    stale.close()


async def test_postgres_connection_loses_the_lock_to_a_standby_and_stops_writing(
    active: PostgresState, postgres_url: str, tmp_path
):
    rooms = (await active.open_stores()).rooms
    standby = open_state_backend(tmp_path, postgres_url)
    try:
        await standby.open()
        _admin(postgres_url, "SELECT pg_terminate_backend(%s)", (_writer_pid(active),))
        await standby.acquire(wait=True, poll_s=0.05)

        rooms.remember("router", "!split-brain:hs", "created")
        reason = await asyncio.wait_for(active.wait_lost(), 30)

        assert "another daemon took the state" in reason
        await asyncio.to_thread(active.connection.flush, 5)
        assert _admin(postgres_url, "SELECT room_id FROM mindroom.rooms") == []
    finally:
        await standby.close()


async def test_postgres_connection_drops_a_refused_write_alone(active: PostgresState, postgres_url: str):
    stores = await active.open_stores()
    assert stores.sync_tokens is not None
    stores.rooms.remember("router", "!one:hs", "created")
    stores.sync_tokens.save("router", "text PostgreSQL refuses \x00")
    stores.rooms.remember("router", "!two:hs", "created")

    assert await asyncio.to_thread(active.connection.flush, 30)

    assert sorted(_admin(postgres_url, "SELECT room_id FROM mindroom.rooms")) == [("!one:hs",), ("!two:hs",)]
    assert _admin(postgres_url, "SELECT count(*) FROM mindroom.sync_tokens") == [(0,)]


async def test_postgres_connection_close_frees_the_lock_before_it_returns(postgres_url: str, tmp_path):
    for _round in range(15):
        first = open_state_backend(tmp_path, postgres_url)
        await first.acquire()
        await first.close()
        second = open_state_backend(tmp_path, postgres_url)
        await second.acquire()  # at once: a restart right after a stop is never refused
        await second.close()
