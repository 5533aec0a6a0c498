"""Memory end to end on a real Synapse, with the state in SQLite and in PostgreSQL: what a person tells an agent
in one thread reaches that agent's later turns with the same person, never another person's, and goes on
`!memory forget`."""

from __future__ import annotations

import re

import pytest

from mindroom.testing.memory_script import is_memory_request, script_memory
from mindroom.testing.model_replies import content_text
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]

FACT = "Alice's favourite colour is teal"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None


def _system_text(request: dict) -> str:
    return "\n".join(content_text(m.get("content")) for m in request["messages"] if m["role"] == "system")


async def _ask(e2e: E2E, human: HumanClient, room_id: str, agent: str, text: str) -> dict:
    """Send `text` as a new thread, wait for the agent's answer; the agent's model request for it."""
    before = len(e2e.model_server.requests)
    event_id = await human.send(room_id, text)
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=30)
    asked = [
        r for r in e2e.model_server.requests[before:] if not is_memory_request(r) and r.get("model") == "agent-model"
    ]
    assert len(asked) == 1, asked
    return asked[0]


async def _command(e2e: E2E, human: HumanClient, room_id: str, text: str) -> str:
    event_id = await human.send(room_id, text)
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id("router")), timeout=15)
    return str(reply["content"]["body"])


async def test_memory_follows_the_person_across_threads_and_goes_on_forget(e2e: E2E, state_url: str | None):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [alice.user_id, bob.user_id],
        {agent: {"display_name": "Helper", "rooms": [room], "memory_backend": "mem0"}},
    )
    if state_url is not None:
        config["storage"] = {"database_url": state_url}
    script_memory(e2e.model_server, "teal", FACT)
    daemon = await e2e.start(config)
    assert daemon.running is not None and daemon.running.mind is not None
    mind = daemon.running.mind
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)

    told = await _ask(e2e, alice, room_id, agent, "my favourite colour is teal")
    await mind.settled()
    later = await _ask(e2e, alice, room_id, agent, "which colour should my new bike be?")
    others = await _ask(e2e, bob, room_id, agent, "which colour should my new bike be?")

    assert FACT not in _system_text(told)  # nothing was known before it was said
    assert FACT in _system_text(later)  # another thread, the same person
    assert FACT not in str(others["messages"])  # never with another person
    assert "teal" in await _command(e2e, alice, room_id, "!memory")
    assert await _command(e2e, bob, room_id, "!memory") == "No agent remembers anything about you."
    assert await _command(e2e, bob, room_id, "!memory forget all") == "No memory of yours matches that."

    assert await _command(e2e, alice, room_id, "!memory forget 1") == "Forgotten: 1 memory."
    after = await _ask(e2e, alice, room_id, agent, "and my car?")
    assert FACT not in str(after["messages"])
    assert await _command(e2e, alice, room_id, "!memory") == "No agent remembers anything about you."


async def test_memory_off_by_default_costs_no_model_call(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("plain"), e2e.name("room")
    script_memory(e2e.model_server, "teal", FACT)
    daemon = await e2e.start(e2e.basic_config([alice.user_id], {agent: {"display_name": "Plain", "rooms": [room]}}))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)

    await _ask(e2e, alice, room_id, agent, "my favourite colour is teal")
    assert daemon.running is not None and daemon.running.mind is not None
    await daemon.running.mind.settled()

    assert not any(is_memory_request(r) for r in e2e.model_server.requests)
    assert not (e2e.storage / "memory").exists()


@pytest.mark.postgres
async def test_memory_moves_to_postgres_with_state_migrate(postgres_url: str, e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [alice.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}, memory={"backend": "mem0"}
    )
    script_memory(e2e.model_server, "teal", FACT)
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await _ask(e2e, alice, room_id, agent, "my favourite colour is teal")
    assert daemon.running is not None and daemon.running.mind is not None
    await daemon.running.mind.settled()
    await e2e.stop()

    migrated = await e2e.migrate_state(postgres_url)
    assert migrated.returncode == 0, migrated.stderr
    assert re.search(r"^memories\s+1\s+1\s+ok$", migrated.stdout, re.M), migrated.stdout

    config["storage"] = {"database_url": postgres_url}
    await e2e.start(config)
    recalled = await _ask(e2e, alice, room_id, agent, "which colour for the kitchen?")
    assert FACT in _system_text(recalled)
