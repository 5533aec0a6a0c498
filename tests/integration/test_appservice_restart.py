"""Application-service delivery through a homeserver restart that takes events with it: the daemon notices the
homeserver come back, fetches what no transaction brought, and answers each message once.

Synapse sends an application service one transaction at a time and keeps what comes meanwhile in memory, its
position already past it; stopped then, it forgets those events, and the transaction it was sending waits after
its restart until the service next fails (for a minute it does not fail: that is its timeout). A daemon that
stalls (a paused process) while people write makes both happen for certain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from mindroom.matrix.appservice.registration_file import AppserviceRegistration
from mindroom.testing.homeserver import TestHomeserver
from mindroom.testing.model_server import Echo, ScriptedModelServer
from tests.integration.conftest import E2E, DaemonProcess
from tests.integration.support import PATIENCE_S, HumanClient, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def _synapse_query(database: Path, sql: str, *args: str) -> list[tuple]:
    """Read the homeserver's own database (read-only, alongside the running server)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as connection:
        return connection.execute(sql, args).fetchall()


def _passed_for_the_service(database: Path, event_id: str) -> bool:
    """True once the homeserver's appservice position is past `event_id`: it is queued in the server's memory."""
    position = _synapse_query(database, "SELECT stream_ordering FROM appservice_stream_position")
    ordering = _synapse_query(database, "SELECT stream_ordering FROM events WHERE event_id = ?", event_id)
    return bool(position and ordering and position[0][0] is not None and position[0][0] >= ordering[0][0])


def sent_everything_to_the_service(database: Path, room_id: str) -> bool:
    """True when the homeserver has sent the service every event it holds, so a restart now loses nothing: its
    position is past the newest event, it does not count the service as down, and no transaction waiting for an
    answer holds the newest event of `room_id` (a room of the service) or no event at all (to-device messages).

    A waiting transaction holding only older events is not waited for: the homeserver sends its transactions
    one at a time, in order, so it went on past that one and will not send it until the service next fails.
    Synapse leaves one behind when events come just as it finishes catching up a service it counted as down
    (the catch-up found nothing left; the service still counted as down, so the new transaction was stored for
    it). A daemon meets that as it starts after one that stopped while the homeserver sent to it, the more so
    when the homeserver restarted in between: its ping then finds no catch-up to hurry, and the catch-up starts
    two seconds after its first events, in the middle of its sign-in. Waiting for no transaction at all then
    timed out; the daemon fetches what such a transaction held when it sees its number skipped."""
    position = _synapse_query(database, "SELECT stream_ordering FROM appservice_stream_position")
    newest = _synapse_query(database, "SELECT MAX(stream_ordering) FROM events")
    latest = _synapse_query(database, "SELECT MAX(stream_ordering) FROM events WHERE room_id = ?", room_id)
    down = _synapse_query(database, "SELECT 1 FROM application_services_state WHERE state = 'down'")
    if not (position and newest and latest) or None in (position[0][0], newest[0][0], latest[0][0]) or down:
        return False
    # Each waiting transaction with the newest of its events (None when it holds none).
    waiting = _synapse_query(
        database,
        "SELECT t.txn_id, MAX(e.stream_ordering) FROM application_services_txns AS t"
        " LEFT JOIN json_each(t.event_ids) AS j LEFT JOIN events AS e ON e.event_id = j.value GROUP BY t.txn_id",
    )
    unsent = [txn_id for txn_id, held in waiting if held is None or held >= latest[0][0]]
    return position[0][0] >= newest[0][0] and not unsent


@contextlib.contextmanager
def _left_behind(homeserver: TestHomeserver, event_ids: list[str]) -> Iterator[None]:
    """A transaction of `event_ids` stored for the service and not sent, as Synapse leaves one when events come
    as it finishes catching the service up; numbered 0, below every transaction it makes, and removed after."""
    registration = homeserver.appservice_registration
    assert registration is not None
    service_id = AppserviceRegistration.load(registration).id
    with sqlite3.connect(homeserver.base_dir / "homeserver.db", timeout=30) as connection:
        connection.execute(
            "INSERT INTO application_services_txns (as_id, txn_id, event_ids) VALUES (?, 0, ?)",
            (service_id, json.dumps(event_ids)),
        )
    try:
        yield
    finally:
        with sqlite3.connect(homeserver.base_dir / "homeserver.db", timeout=30) as connection:
            connection.execute("DELETE FROM application_services_txns WHERE as_id = ? AND txn_id = 0", (service_id,))


async def _daemon_world(e2e: E2E) -> tuple[HumanClient, DaemonProcess, str, str]:
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [room]}},
        rooms={room: {"name": "Plain", "encrypted": False}},
    )
    e2e.model_server.set_default(Echo(prefix="echo: "))
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    response = await human.client.room_resolve_alias(f"#{room}:{e2e.homeserver.server_name}")
    room_id = response.room_id
    await e2e.joined(human, room_id)
    return human, daemon, room_id, f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"


@pytest_asyncio.fixture
async def world(
    matrix_homeserver: TestHomeserver, model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[E2E]:
    """A test world whose daemon receives through the test homeserver's application service."""
    e2e = E2E(matrix_homeserver, model_server, tmp_path, "appservice")
    try:
        yield e2e
    finally:
        await e2e.close()


async def test_appservice_events_the_homeserver_dropped_in_its_restart_are_fetched_and_answered_once(world: E2E):
    e2e = world
    human, daemon, room_id, agent_id = await _daemon_world(e2e)
    database = e2e.homeserver.base_dir / "homeserver.db"
    before = await human.send(room_id, "before the stall", mentions=[agent_id])
    await human.wait_for(thread_replies(before, agent_id))

    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGSTOP)
    try:
        sent = await human.send(room_id, "sent to a stalled daemon", mentions=[agent_id])
        # Once the homeserver passed the first message, a transaction to the stalled daemon is under way (that
        # message's own, or the one before it), and the second waits in the server's memory behind it.
        await eventually(lambda: _passed_for_the_service(database, sent), "the homeserver taking the first message")
        queued = await human.send(room_id, "queued behind it", mentions=[agent_id])
        await eventually(lambda: _passed_for_the_service(database, queued), "the homeserver queueing the second")
        await asyncio.to_thread(e2e.homeserver.stop)
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    await daemon.wait_for_line("homeserver unreachable")
    await asyncio.to_thread(e2e.homeserver.start)

    for event_id in (sent, queued):
        await human.wait_for(thread_replies(event_id, agent_id), timeout=2 * PATIENCE_S)
    after = await human.send(room_id, "after the restart", mentions=[agent_id])
    await human.wait_for(thread_replies(after, agent_id), timeout=2 * PATIENCE_S)
    assert await daemon.terminate() == 0
    await human.sync_past(room_id)

    for event_id in (before, sent, queued, after):
        assert len(human.matching(thread_replies(event_id, agent_id))) == 1, event_id
    assert "caught up after the homeserver came back" in daemon.output()


async def test_appservice_a_transaction_the_homeserver_left_behind_is_not_waited_for_but_a_later_one_is(world: E2E):
    e2e = world
    human, daemon, room_id, agent_id = await _daemon_world(e2e)
    database = e2e.homeserver.base_dir / "homeserver.db"
    question = await human.send(room_id, "a question", mentions=[agent_id])
    await human.wait_for(thread_replies(question, agent_id))
    await eventually(lambda: sent_everything_to_the_service(database, room_id), "the homeserver sending all it has")
    newest = _synapse_query(
        database, "SELECT event_id FROM events WHERE room_id = ? ORDER BY stream_ordering DESC LIMIT 1", room_id
    )[0][0]

    with _left_behind(e2e.homeserver, [question]):  # older than the answer
        await eventually(lambda: sent_everything_to_the_service(database, room_id), "passing what was left behind")
    with _left_behind(e2e.homeserver, [question, newest]):
        assert not sent_everything_to_the_service(database, room_id)
    with _left_behind(e2e.homeserver, []):  # to-device messages only: such a transaction is being sent
        assert not sent_everything_to_the_service(database, room_id)
    with _left_behind(e2e.homeserver, ["$not-an-event-of-this-homeserver"]):
        assert not sent_everything_to_the_service(database, room_id)
    assert await daemon.terminate() == 0
