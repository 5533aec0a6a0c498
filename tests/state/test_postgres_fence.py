"""The fenced lock on a real PostgreSQL: the active daemon answers only while it can show it holds the lock,
a takeover waits out a holder that did not let go, and a stale holder's writes and relock are refused."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psycopg
import pytest
from structlog.testing import capture_logs

from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, hook
from mindroom.state.postgres.backend import PostgresState
from mindroom.testing.model_server import ScriptedModelServer, Text, ToolCall, model_server
from tests.bots.bench import ALICE, LOBBY, Bench, bench_config, registry_of
from tests.state.postgres_server import TestPostgres

pytestmark = [pytest.mark.postgres, pytest.mark.asyncio]

__all__ = ["model_server"]

LEASE_S = 1.0
REFUSED = "not answering: this daemon cannot show it still holds the state lock"
WAITED_OUT = "state lock taken from a holder that did not release it; waiting out its lease"


def _state(url: str, *, idle_check_s: float = 0.1) -> PostgresState:
    return PostgresState(url, "test", idle_check_s=idle_check_s, lease_s=LEASE_S)


def _admin(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description is not None else []


def _terminate(url: str, pid: int) -> None:
    """End a session and wait until its backend is gone (and its advisory locks with it)."""
    assert _admin(url, "SELECT pg_terminate_backend(%s, 30000)", (pid,)) == [(True,)]


def _writer_pid(state: PostgresState) -> int:
    return int(state.connection.call(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0]))


async def _until(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_postgres_fence_no_claim_while_the_session_cannot_show_the_lock(postgres_url: str, opened):
    active = _state(postgres_url)
    opened.append(active)
    await active.acquire()
    journal = (await active.open_stores()).journal
    assert journal.claim("agent", "$before")
    backend = _writer_pid(active)

    os.kill(backend, signal.SIGSTOP)  # the database stops answering this session: it cannot show the lock
    try:
        await asyncio.sleep(LEASE_S * 1.5)
        with capture_logs() as logs:
            stalled = journal.claim("agent", "$during")
    finally:
        os.kill(backend, signal.SIGCONT)

    assert stalled is False
    assert [(e["agent"], e["event_id"]) for e in logs if e["event"] == REFUSED] == [("agent", "$during")]
    await _until(active.connection.holds_lock)  # the session answers again, and still holds the lock
    assert journal.claim("agent", "$after")
    assert active.connection.lost is None


async def test_postgres_fence_an_outage_stops_claims_at_once_and_the_standby_takes_over(
    postgres_url: str, postgres_server: TestPostgres, opened
):
    active, standby = _state(postgres_url), _state(postgres_url)
    opened.extend([active, standby])
    await active.acquire()
    journal = (await active.open_stores()).journal
    await standby.open()  # its session is up before the outage, as a standby's is
    database = postgres_url.rsplit("/", 1)[1]
    pid = _writer_pid(active)
    # The outage, as the active daemon sees it: its session ends and no new one can be opened.
    _admin(postgres_server.admin_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    try:
        with capture_logs() as logs:
            _terminate(postgres_server.admin_url, pid)
            await _until(lambda: not active.connection.holds_lock())
        # Refused because the session failed (noticed at once), not because its lease ran out meanwhile.
        assert "state database connection lost; reconnecting" in [entry["event"] for entry in logs]
        claims_while_down = []
        taking = asyncio.create_task(standby.acquire(wait=True, poll_s=0.05))
        while not taking.done():
            claims_while_down.append(journal.claim("agent", f"$e{len(claims_while_down)}"))
            await asyncio.sleep(0.02)
        await taking
        # Taken while the active daemon still cannot connect: the standby waits for nothing of it.
        assert standby.locked and claims_while_down and not any(claims_while_down)
        standby_journal = (await standby.open_stores()).journal
        assert standby_journal.claim("agent", "$e0")  # the event goes to one daemon: the standby
    finally:
        _admin(postgres_server.admin_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")

    reason = await asyncio.wait_for(active.wait_lost(), 30)
    assert "another daemon took the state" in reason
    assert journal.claim("agent", "$late") is False
    assert await asyncio.to_thread(standby.connection.flush, 10)
    rows = _admin(postgres_url, "SELECT event_id, generation FROM mindroom.handled_events ORDER BY event_id")
    assert rows == [("$e0", standby.connection.generation)]


async def test_postgres_fence_takeover_from_a_holder_that_did_not_let_go_waits_out_its_lease(postgres_url: str, opened):
    active = _state(postgres_url, idle_check_s=60)  # it will not notice on its own that its session ended
    standby = _state(postgres_url)
    opened.extend([active, standby])
    await active.acquire()
    journal = (await active.open_stores()).journal
    assert journal.claim("agent", "$one")
    first = active.connection.generation
    await standby.open()
    _terminate(postgres_url, _writer_pid(active))

    started = time.monotonic()
    with capture_logs() as taking:
        await standby.acquire()
    waited = time.monotonic() - started

    assert WAITED_OUT in [entry["event"] for entry in taking]
    assert waited >= LEASE_S, f"the takeover began {waited:.2f} s after the lock was free"
    assert first is not None and standby.connection.generation == first + 1
    assert not active.connection.holds_lock() and journal.claim("agent", "$two") is False
    await standby.close()

    successor = _state(postgres_url)
    opened.append(successor)
    with capture_logs() as succeeding:
        await successor.acquire()  # released cleanly: nothing to wait for
    assert "state lock taken" in [entry["event"] for entry in succeeding]
    assert WAITED_OUT not in [entry["event"] for entry in succeeding]
    assert successor.connection.generation == first + 2


async def test_postgres_fence_a_holder_that_comes_back_after_another_held_the_lock_is_lost(postgres_url: str, opened):
    active = _state(postgres_url, idle_check_s=60)
    opened.append(active)
    await active.acquire()
    rooms = (await active.open_stores()).rooms
    _terminate(postgres_url, _writer_pid(active))
    other = _state(postgres_url)
    await other.acquire()  # held and released again while the first one was away
    (await other.open_stores()).rooms.remember("router", "!theirs:hs", "created")
    await other.close()

    rooms.remember("router", "!stale:hs", "created")  # the lock is free: taking it back must still fail
    reason = await asyncio.wait_for(active.wait_lost(), 30)

    assert "another daemon took the state" in reason
    assert _admin(postgres_url, "SELECT room_id FROM mindroom.rooms") == [("!theirs:hs",)]
    assert _admin(postgres_url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [(0,)]


async def test_postgres_fence_claims_carry_the_generation_and_a_stale_one_is_refused(postgres_url: str, opened):
    active = _state(postgres_url)
    opened.append(active)
    await active.acquire()
    journal = (await active.open_stores()).journal
    assert journal.claim("agent", "$fresh")
    assert await asyncio.to_thread(active.connection.flush, 10)
    generation = active.connection.generation
    assert _admin(postgres_url, "SELECT generation FROM mindroom.handled_events") == [(generation,)]

    # The fence moves on (as a takeover records it) while this daemon still thinks it holds the state.
    _admin(postgres_url, "UPDATE mindroom.fence SET generation = generation + 1")
    journal.claim("agent", "$stale")
    reason = await asyncio.wait_for(active.wait_lost(), 10)

    assert "fence moved past" in reason
    assert _admin(postgres_url, "SELECT event_id FROM mindroom.handled_events") == [("$fresh",)]
    assert journal.claim("agent", "$after") is False


async def test_postgres_fence_a_claimed_turn_whose_lock_is_lost_mid_generation_sends_nothing(
    postgres_url: str, postgres_server: TestPostgres, opened, tmp_path, model_server: ScriptedModelServer
):
    active, standby = _state(postgres_url), _state(postgres_url)
    opened.extend([active, standby])
    await active.acquire()
    journal = (await active.open_stores()).journal
    await standby.open()
    generating, go_on = asyncio.Event(), asyncio.Event()

    @hook(EVENT_TOOL_BEFORE_CALL, timeout_ms=120_000)
    async def hold(ctx: object) -> None:  # the turn is claimed and the model is at work: the lock goes meanwhile
        generating.set()
        await go_on.wait()

    model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("It is 42."))
    agents = {"helper": {"display_name": "Helper", "rooms": ["lobby"], "tools": ["calculator"]}}
    bench = Bench(tmp_path, bench_config(model_server, agents), registry_of(hold), journal=journal)
    await bench.start()
    database = postgres_url.rsplit("/", 1)[1]
    try:
        question = bench.server.message(LOBBY, ALICE, "what is six times seven?")
        await bench.deliver(question)
        await asyncio.wait_for(generating.wait(), 60)
        assert await asyncio.to_thread(active.connection.flush, 10)  # the claim is in the database
        _admin(postgres_server.admin_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        _terminate(postgres_server.admin_url, _writer_pid(active))
        await standby.acquire(wait=True, poll_s=0.05)  # the standby holds the state now
        with capture_logs() as logs:
            go_on.set()
            await bench.settle(60)
    finally:
        _admin(postgres_server.admin_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        go_on.set()
        await bench.stop()

    helper = bench.client("helper")
    assert (helper.messages, helper.edits) == ([], [])
    assert len(model_server.requests) == 2  # the answer was made, and not sent
    assert "turn left unanswered: the state lock could not be shown" in [entry["event"] for entry in logs]
    standby_journal = (await standby.open_stores()).journal
    assert [pending.event_id for pending in standby_journal.pending("helper")] == [question.event_id]
