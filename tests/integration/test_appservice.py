"""Application-service delivery on a real Synapse: the homeserver pushes each event once, the daemon hands it to
each of its bots in the room, and nothing a bot's own sync brought is lost on the way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from mindroom.testing.homeserver import TestHomeserver
from mindroom.testing.model_server import Echo, ScriptedModelServer, Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import MARKER_TYPE, HumanClient, edits_of, eventually, thread_replies
from tests.integration.test_edits import _edit
from tests.integration.test_encryption import _encrypted_human, _encrypted_room_world

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


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


def _deliveries(logs: list[dict[str, Any]]) -> dict[str, str]:
    return {entry["agent"]: entry["delivery"] for entry in logs if entry.get("event") == "receiving"}


async def _plain_world(e2e: E2E, human: HumanClient, agents: list[str]) -> tuple[str, dict[str, Any]]:
    room = e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {name: {"display_name": name.title(), "rooms": [room]} for name in agents},
        rooms={room: {"name": "Plain", "encrypted": False}},
    )
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return room_id, config


async def test_appservice_a_plain_room_question_is_answered_by_the_agent_mentioned_only(world: E2E):
    human = await world.human()
    first, second = world.name("alpha"), world.name("beta")
    world.model_server.set_default(Echo(prefix="echo: "))
    with capture_logs() as logs:
        room_id, _ = await _plain_world(world, human, [first, second])
    second_id = world.user_id(second)

    question = await human.send(room_id, f"{second_id} what is two and two?", mentions=[second_id])
    answer = await human.wait_for(thread_replies(question))
    await world.settle(human, room_id)

    assert _deliveries(logs) == {"router": "appservice", first: "appservice", second: "appservice"}
    assert answer["sender"] == second_id
    assert answer["content"]["body"].startswith("echo: ")
    assert len(human.matching(thread_replies(question))) == 1  # the other bots heard it and kept quiet
    assert len(world.model_server.requests) == 1


async def test_appservice_an_encrypted_room_question_is_decrypted_and_answered_encrypted(world: E2E):
    human = await _encrypted_human(world)
    agent = world.name("helper")
    room_id, _ = await _encrypted_room_world(world, human, [agent])
    world.model_server.set_default(Text("the secret is safe"), model="agent-model")
    agent_id = world.user_id(agent)

    question = await human.send(room_id, "what did I just say?")
    answer = await human.wait_for(thread_replies(question, agent_id))

    assert "what did I just say?" in last_user_message(world.model_server.requests[-1])
    assert answer.get("decrypted") is True
    assert answer["content"]["body"] == "the secret is safe"
    raw = [e for e in await human.raw_timeline(room_id) if e["event_id"] == answer["event_id"]]
    assert [e["type"] for e in raw] == ["m.room.encrypted"]


async def test_appservice_the_first_encrypted_question_after_a_restart_is_answered(world: E2E):
    human = await _encrypted_human(world)
    agent = world.name("helper")
    room_id, config = await _encrypted_room_world(world, human, [agent])
    world.model_server.set_default(Text("the secret is safe"), model="agent-model")
    agent_id = world.user_id(agent)

    await world.stop()
    # Pushed to nobody: the homeserver counts the service as down and, until its retries get through, leaves
    # to-device messages (the room key of the question) out of its transactions.
    await human.send_raw(room_id, MARKER_TYPE, {"marker": "while the daemon is away"})
    await world.start(config, watch=False)
    question = await human.send(room_id, "what did I just say?")
    answer = await human.wait_for(thread_replies(question, agent_id))

    assert answer.get("decrypted") is True
    assert answer["content"]["body"] == "the secret is safe"
    assert "what did I just say?" in last_user_message(world.model_server.requests[-1])


async def test_appservice_an_invite_to_a_new_dm_is_accepted_and_the_first_message_answered(world: E2E):
    human = await world.human()
    agent = world.name("helper")
    await _plain_world(world, human, [agent])
    agent_id = world.user_id(agent)
    world.model_server.set_default(Echo(prefix="dm: "))

    dm = await human.create_room([agent_id], encrypted=False, direct=True)
    # Sent before the agent joins: no bot of the daemon is in the room yet, so no transaction carries it.
    await human.send(dm, "hello in private")
    answer = await human.wait_for(lambda e: _message_of(e, dm, agent_id))
    await world.settle(human, dm)

    assert _body(answer).startswith("dm: hello in private")
    assert len(human.matching(lambda e: _message_of(e, dm, agent_id))) == 1


def _message_of(event: dict[str, Any], room_id: str, sender: str) -> bool:
    return event.get("room_id") == room_id and event["sender"] == sender and event["type"] == "m.room.message"


def _body(event: dict[str, Any]) -> str:
    return str(event.get("content", {}).get("body", ""))


async def test_appservice_an_edited_question_edits_the_answer(world: E2E):
    human = await world.human()
    agent = world.name("helper")
    room_id, _ = await _plain_world(world, human, [agent])
    agent_id = world.user_id(agent)
    world.model_server.set_default(Echo(prefix="echo: "))

    question = await human.send(room_id, f"{agent_id} the capital of Frence?", mentions=[agent_id])
    answer = await human.wait_for(thread_replies(question, agent_id))
    await world.idle()
    await _edit(human, room_id, question, f"{agent_id} the capital of France?")
    edited = await human.wait_for(
        lambda e: edits_of(answer["event_id"])(e) and "France" in e["content"]["m.new_content"]["body"]
    )

    assert edited["sender"] == agent_id
    assert "France" in last_user_message(world.model_server.requests[-1])


async def test_appservice_a_kicked_agent_notices_and_hears_nothing_more_from_the_room(world: E2E):
    human = await world.human()
    agent = world.name("helper")
    await _plain_world(world, human, [agent])
    agent_id = world.user_id(agent)
    world.model_server.set_default(Echo(prefix="echo: "))
    room_id = await human.create_room([agent_id], encrypted=False)
    await human.wait_for_member(room_id, agent_id)
    bot = world.daemon.bots[agent] if world.daemon else None
    assert bot is not None
    await eventually(lambda: room_id in bot.joined_rooms, "the agent following its join")

    with capture_logs() as logs:
        await human.client.room_kick(room_id, agent_id, reason="enough")
        await eventually(lambda: room_id not in bot.joined_rooms, "the agent noticing its removal")
        question = await human.send(room_id, f"{agent_id} are you still there?", mentions=[agent_id])
        await world.settle(human, room_id)

    removed = [e for e in logs if e.get("event") == "removed from a room" and e.get("agent") == agent]
    assert [(e["room_id"], e["by"], e["membership"]) for e in removed] == [(room_id, human.user_id, "leave")]
    assert not human.matching(thread_replies(question))
    assert world.model_server.requests == []


async def test_appservice_a_restart_answers_what_came_meanwhile_once_and_nothing_twice(world: E2E):
    human = await world.human()
    agent = world.name("helper")
    room_id, config = await _plain_world(world, human, [agent])
    agent_id = world.user_id(agent)
    world.model_server.set_default(Echo(prefix="echo: "))
    before = await human.send(room_id, f"{agent_id} before the restart", mentions=[agent_id])
    await human.wait_for(thread_replies(before, agent_id))
    await world.idle()

    await world.stop()
    meanwhile = await human.send(room_id, f"{agent_id} while you were away", mentions=[agent_id])
    await world.start(config, watch=False)
    late = await human.wait_for(thread_replies(meanwhile, agent_id))
    after = await human.send(room_id, f"{agent_id} after the restart", mentions=[agent_id])
    await human.wait_for(thread_replies(after, agent_id))
    await world.settle(human, room_id)

    assert "while you were away" in _body(late)
    asked = [last_user_message(request) for request in world.model_server.requests]
    assert [sum("before the restart" in m for m in asked), sum("while you were away" in m for m in asked)] == [1, 1]
    assert len(human.matching(thread_replies(before, agent_id))) == 1
    assert len(human.matching(thread_replies(meanwhile, agent_id))) == 1
