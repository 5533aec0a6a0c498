"""State in PostgreSQL on a real Synapse: every kind of state round-trips through the database, and
`mindroom state migrate` carries a SQLite data directory over (refused while a daemon holds it)."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

import psycopg
import pytest

from mindroom.ai import load_history
from mindroom.ai.sessions.history import session_table
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, eventually, thread_replies
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]


def _rows(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


async def _world(e2e: E2E, url: str | None) -> tuple[HumanClient, str, str, dict]:
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    if url is not None:
        config["storage"] = {"database_url": url}
    return human, agent, room, config


async def _ask(e2e: E2E, human: HumanClient, room_id: str, agent: str, text: str) -> str:
    event_id = await human.send(room_id, text)
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    return event_id


async def test_postgres_every_kind_of_state_round_trips_and_no_sqlite_file_is_written(postgres_url: str, e2e: E2E):
    human, agent, room, config = await _world(e2e, postgres_url)
    e2e.model_server.script(Text("First answer."), Text("Second answer."), model="agent-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    router = e2e.user_id("router")

    root = await _ask(e2e, human, room_id, agent, "first question")
    command = await human.send(room_id, "!schedule in 2 hours water the plants")
    await human.wait_for(thread_replies(command, router))
    await e2e.stop()

    handled = _rows(postgres_url, "SELECT entity, pending FROM mindroom.handled_events WHERE event_id = %s", (root,))
    assert (agent, False) in handled
    rooms = _rows(postgres_url, "SELECT entity, room_id, origin FROM mindroom.rooms")
    assert ("router", room_id, "created") in rooms
    schedules = _rows(postgres_url, "SELECT room_id, message, next_run FROM mindroom.schedules")
    assert [(r[0], r[1]) for r in schedules] == [(room_id, "water the plants")] and schedules[0][2] is not None
    tokens = dict(_rows(postgres_url, "SELECT bot, token FROM mindroom.sync_tokens"))
    assert set(tokens) == {"router", agent} and all(tokens.values())
    runs = _rows(postgres_url, f'SELECT count(*) FROM mindroom."{session_table(agent)}_runs"')
    assert runs[0][0] == 1
    assert _rows(postgres_url, "SELECT host, pid FROM mindroom.lock_holder")[0][1] == os.getpid()
    # The journal, rooms, schedules and sessions are all in the database: no SQLite file was made.
    # Crypto stores stay files (one per bot device, under crypto/).
    made = [p for p in e2e.storage.rglob("*.db") if "crypto" not in p.relative_to(e2e.storage).parts]
    assert not made, made
    assert not list((e2e.storage / "matrix" / "sync").glob("*.token"))
    assert list((e2e.storage / "matrix" / "credentials").glob("*.json"))  # credentials stay files

    await e2e.start(config)
    await human.send(room_id, "second question", thread_root=root)
    await human.wait_for(
        lambda ev: thread_replies(root, e2e.user_id(agent))(ev) and ev["content"]["body"] == "Second answer.",
    )
    listing = await human.send(room_id, "!schedule list")
    reply = await human.wait_for(thread_replies(listing, router))
    assert "water the plants" in reply["content"]["body"]
    second = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"][-1]
    history = [(m["role"], m.get("content")) for m in second["messages"] if m["role"] in ("user", "assistant")]
    assert history[:2] == [("user", "first question"), ("assistant", "First answer.")]
    assert await load_history(agent, f"{room_id}:{root}", storage_root=e2e.storage, database_url=postgres_url) == [
        ("user", "first question"),
        ("assistant", "First answer."),
        ("user", "second question"),
        ("assistant", "Second answer."),
    ]
    await e2e.settle(human, room_id)
    assert len(human.matching(lambda ev: ev["event_id"] != root and thread_replies(root, e2e.user_id(agent))(ev))) == 2


async def test_postgres_migrate_copies_sqlite_state_and_the_daemon_continues_on_it(postgres_url: str, e2e: E2E):
    human, agent, room, config = await _world(e2e, None)
    config["administrators"] = [human.user_id]
    e2e.model_server.script(Text("Answered on SQLite."), Text("Answered on PostgreSQL."), model="agent-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    root = await _ask(e2e, human, room_id, agent, "remember the number 42")
    command = await human.send(room_id, "!schedule in 3 hours stretch")
    await human.wait_for(thread_replies(command, e2e.user_id("router")))
    window = await human.send(room_id, "!auto_approve 30")
    await human.wait_for(thread_replies(window, e2e.user_id("router")))
    await human.send(room_id, "!model routing", thread_root=command)  # a setting from chat, in that thread only
    await eventually(lambda: len(human.matching(thread_replies(command, e2e.user_id("router")))) == 2, "!model")

    refused = await e2e.migrate_state(postgres_url)
    assert refused.returncode == 3, refused.stderr
    assert f"held by another daemon (host {os.uname().nodename}, pid {os.getpid()}, since " in refused.stderr
    await e2e.stop()

    migrated = await e2e.migrate_state(postgres_url)

    assert migrated.returncode == 0, migrated.stderr
    counts = {
        m[0].strip(): (int(m[1]), int(m[2])) for m in re.findall(r"^(.+?)\s+(\d+)\s+(\d+)\s+ok$", migrated.stdout, re.M)
    }
    assert counts["rooms"][0] >= 1 and counts["schedules"] == (1, 1) and counts["sync tokens"] == (2, 2)
    assert counts["answers"] == (1, 1) and counts["approvals"] == (0, 0) and counts["overrides"] == (1, 1)
    assert counts["auto-approve windows"] == (1, 1) and counts["approval grants"] == (0, 0)
    assert counts["handled events"][0] >= 2 and counts["handled events"][0] == counts["handled events"][1]
    assert counts[f"sessions of {agent}"] == (1, 1) and counts[f"runs of {agent}"] == (1, 1)
    assert "MISSING" not in migrated.stdout
    password = urlsplit(postgres_url).password
    assert password and password not in migrated.stdout + migrated.stderr

    config["storage"] = {"database_url": postgres_url}
    await e2e.start(config)
    await human.send(room_id, "what number?", thread_root=root)
    await human.wait_for(
        lambda ev: thread_replies(root, e2e.user_id(agent))(ev) and ev["content"]["body"] == "Answered on PostgreSQL.",
    )
    last = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"][-1]
    assert ("user", "remember the number 42") in [(m["role"], m.get("content")) for m in last["messages"]]
    await e2e.settle(human, room_id)
    assert len(human.matching(thread_replies(root, e2e.user_id(agent)))) == 2
    assert _rows(postgres_url, "SELECT message FROM mindroom.schedules") == [("stretch",)]
    assert _rows(postgres_url, "SELECT requester_id FROM mindroom.auto_approve_windows") == [(human.user_id,)]
    assert _rows(postgres_url, "SELECT scope, key, value FROM mindroom.overrides") == [("thread", "model", '"routing"')]
