"""Configured rooms on a real homeserver: an alias someone else took first is never used."""

from __future__ import annotations

import asyncio

import nio
import pytest
from structlog.testing import capture_logs

from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_rooms_a_squatted_alias_is_refused_and_nobody_is_invited_there(e2e: E2E):
    operator = await e2e.human("operator")
    stranger = await e2e.human("stranger")
    agent, room, alerts = e2e.name("helper"), e2e.name("room"), e2e.name("alerts")
    squatted = await stranger.client.room_create(alias=alerts, visibility=nio.RoomVisibility.public)
    assert isinstance(squatted, nio.RoomCreateResponse)
    await stranger.client.room_put_state(squatted.room_id, "m.room.join_rules", {"join_rule": "public"})
    config = e2e.basic_config(
        [operator.user_id],
        {agent: {"display_name": "Helper", "rooms": [room, alerts]}},
        admin_room=alerts,
    )

    with capture_logs() as logs:
        daemon = await e2e.start(config, watch=False)

    assert daemon.running is not None
    assert alerts not in daemon.running.directory.room_ids and room in daemon.running.directory.room_ids
    refusals = [
        entry
        for entry in logs
        if entry["event"] == "room alias belongs to an account outside this daemon; not using it"
    ]
    assert [entry["room_id"] for entry in refusals] == [squatted.room_id]
    members = await stranger.client.joined_members(squatted.room_id)
    assert {member.user_id for member in members.members} == {stranger.user_id}
    state = await stranger.client.room_get_state(squatted.room_id)
    invited = [event for event in state.events if event.get("content", {}).get("membership") == "invite"]
    assert invited == []

    own = daemon.running.directory.room_ids[room]
    await e2e.stop()
    daemon = await e2e.start(config, watch=False)  # a restart keeps using the room the daemon made
    assert daemon.running is not None and daemon.running.directory.room_ids[room] == own


async def _dm(human, agent_user: str) -> str:
    created = await human.client.room_create(is_direct=True, invite=[agent_user], preset=nio.RoomPreset.private_chat)
    assert isinstance(created, nio.RoomCreateResponse), created
    return str(created.room_id)


def _answers(event: dict, event_id: str) -> bool:
    relation = event["content"].get("m.relates_to") or {}
    return event_id in (relation.get("event_id"), (relation.get("m.in_reply_to") or {}).get("event_id"))


async def _answer(human, room_id: str, agent_user: str, text: str, timeout: float = 30.0) -> dict:
    event_id = await human.send(room_id, text)
    return await human.wait_for(
        lambda ev: ev.get("room_id") == room_id and ev.get("sender") == agent_user and _answers(ev, event_id),
        timeout=timeout,
    )


async def test_rooms_an_agent_answers_in_a_dm_without_a_mention_even_after_a_restart_and_leaves_on_request(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    await e2e.start(config, watch=False)
    agent_user = e2e.user_id(agent)
    dm = await _dm(human, agent_user)

    first = await _answer(human, dm, agent_user, "hello in private")
    await e2e.stop()
    await e2e.start(config, watch=False)
    second = await _answer(human, dm, agent_user, "still there after a restart?")

    assert "hello in private" in first["content"]["body"]
    assert "still there" in second["content"]["body"]
    await human.send(dm, "!leave")
    deadline = asyncio.get_running_loop().time() + 20
    while agent_user in {m.user_id for m in (await human.client.joined_members(dm)).members}:
        assert asyncio.get_running_loop().time() < deadline, "the agent did not leave"
        await asyncio.sleep(0.2)


async def test_rooms_an_agent_that_accepts_no_invites_declines_them(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id], {agent: {"display_name": "Helper", "rooms": [room], "accept_invites": "never"}}
    )
    await e2e.start(config, watch=False)
    agent_user = e2e.user_id(agent)
    dm = await _dm(human, agent_user)

    deadline = asyncio.get_running_loop().time() + 5
    while asyncio.get_running_loop().time() < deadline:
        state = await human.client.room_get_state(dm)
        memberships = {
            e["state_key"]: e["content"].get("membership") for e in state.events if e["type"] == "m.room.member"
        }
        if memberships.get(agent_user) == "leave":
            break
        await asyncio.sleep(0.2)
    assert memberships.get(agent_user) == "leave"


async def test_rooms_room_mode_answers_in_the_main_timeline_with_html_and_splits_long_answers(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "rooms": [room]}},
        rooms={room: {"thread_mode": "room"}},
    )
    long_answer = "\n\n".join(f"Paragraph {i}: " + "x" * 900 for i in range(40))
    e2e.model_server.when(lambda r: "long please" in str(r["messages"][-1]), Text(long_answer))
    e2e.model_server.set_default(Text("**bold** and `code`"))
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)

    reply = await _answer(human, room_id, agent_user, "format please")
    relation = reply["content"]["m.relates_to"]
    assert "rel_type" not in relation and "m.in_reply_to" in relation  # a plain reply, not a thread
    assert reply["content"]["body"] == "**bold** and `code`"
    assert reply["content"]["formatted_body"] == "<strong>bold</strong> and <code>code</code>"
    assert not reply["content"]["body"].startswith(">")  # no quoted fallback of the question

    first = await _answer(human, room_id, agent_user, "long please")
    await asyncio.sleep(3)
    parts = [
        ev["content"]["body"]
        for ev in human.events
        if ev.get("room_id") == room_id
        and ev.get("sender") == agent_user
        and "Paragraph" in ev["content"].get("body", "")
    ]
    assert len(parts) >= 2 and parts[0] == first["content"]["body"]
    assert "\n\n".join(parts) == long_answer


async def test_rooms_a_user_of_the_agents_room_opens_a_dm_with_it_and_a_user_of_another_room_cannot(e2e: E2E):
    operator = await e2e.human("operator")
    bob = await e2e.human("bob")
    olga = await e2e.human("olga")
    helper, other, room, ops = e2e.name("helper"), e2e.name("other"), e2e.name("room"), e2e.name("ops")
    config = e2e.basic_config(
        [operator.user_id],
        {helper: {"display_name": "Helper", "rooms": [room]}, other: {"display_name": "Other", "rooms": [ops]}},
    )
    config["authorization"]["room_permissions"] = {room: [bob.user_id], ops: [olga.user_id]}
    e2e.model_server.set_default(Text("hello from the helper"), model="agent-model")
    await e2e.start(config, watch=False)
    helper_user = e2e.user_id(helper)

    dm = await _dm(bob, helper_user)
    answer = await _answer(bob, dm, helper_user, "hello in private")

    assert answer["content"]["body"] == "hello from the helper"
    refused = await _dm(olga, helper_user)
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        state = await olga.client.room_get_state(refused)
        members = {e["state_key"]: e["content"].get("membership") for e in state.events if e["type"] == "m.room.member"}
        if members.get(helper_user) == "leave":
            break
        assert asyncio.get_running_loop().time() < deadline, f"the invite was not declined: {members}"
        await asyncio.sleep(0.2)
