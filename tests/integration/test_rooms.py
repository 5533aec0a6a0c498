"""Configured rooms on a real homeserver: an alias someone else took first is never used."""

from __future__ import annotations

import time

import nio
import pytest
from structlog.testing import capture_logs

from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import eventually

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


async def _answer(human, room_id: str, agent_user: str, text: str) -> dict:
    event_id = await human.send(room_id, text)
    return await human.wait_for(
        lambda ev: ev.get("room_id") == room_id and ev.get("sender") == agent_user and _answers(ev, event_id)
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

    async def left() -> bool:
        return agent_user not in {m.user_id for m in (await human.client.joined_members(dm)).members}

    await eventually(left, "the agent leaving")


async def test_rooms_an_agent_that_accepts_no_invites_declines_them(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id], {agent: {"display_name": "Helper", "rooms": [room], "accept_invites": "never"}}
    )
    await e2e.start(config, watch=False)
    agent_user = e2e.user_id(agent)
    dm = await _dm(human, agent_user)

    async def declined() -> bool:
        state = await human.client.room_get_state(dm)
        members = {e["state_key"]: e["content"].get("membership") for e in state.events if e["type"] == "m.room.member"}
        return members.get(agent_user) == "leave"

    await eventually(declined, "the agent declining the invite")


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

    def parts() -> list[str]:
        return [
            ev["content"]["body"]
            for ev in human.events
            if ev.get("room_id") == room_id
            and ev.get("sender") == agent_user
            and "Paragraph" in ev["content"].get("body", "")
        ]

    await eventually(lambda: "Paragraph 39" in "".join(parts()), "the last part of the long answer")
    await e2e.settle(human, room_id)
    assert len(parts()) >= 2 and parts()[0] == first["content"]["body"]
    assert "\n\n".join(parts()) == long_answer


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

    async def declined() -> bool:
        state = await olga.client.room_get_state(refused)
        members = {e["state_key"]: e["content"].get("membership") for e in state.events if e["type"] == "m.room.member"}
        return members.get(helper_user) == "leave"

    await eventually(declined, "the helper declining an invite from a user of another room")


async def test_rooms_the_space_follows_the_config_a_room_taken_out_leaves_it_and_others_stay(e2e: E2E):
    ana = await e2e.human("ana")
    agent, kept, dropped = e2e.name("helper"), e2e.name("kept"), e2e.name("dropped")
    config = e2e.basic_config(
        [ana.user_id],
        {agent: {"display_name": "Helper", "rooms": [kept, dropped]}},
        matrix_space={"name": e2e.name("Space")},
    )
    await e2e.start(config)
    kept_id, dropped_id = e2e.room_id(kept), e2e.room_id(dropped)
    alias = f"#{e2e.account_prefix}space:{e2e.homeserver.server_name}"
    resolved = await ana.client.room_resolve_alias(alias)
    assert isinstance(resolved, nio.RoomResolveAliasResponse), resolved
    space_id = resolved.room_id
    await e2e.joined(ana, space_id)
    # A room added to the space by hand (here through the router's account, which holds the space's power) is not
    # one the config named: it stays.
    own = await ana.client.room_create(name="Ana's own")
    assert isinstance(own, nio.RoomCreateResponse)

    async def children() -> dict[str, dict]:
        state = await ana.client.room_get_state(space_id)
        assert isinstance(state, nio.RoomGetStateResponse), state
        return {e["state_key"]: e["content"] for e in state.events if e["type"] == "m.space.child"}

    assert {room for room, content in (await children()).items() if content.get("via")} == {kept_id, dropped_id}
    router = e2e.daemon.bots["router"].client
    assert await router.put_room_state(space_id, "m.space.child", own.room_id, {"via": ["example.org"]})

    config["agents"][agent]["rooms"] = [kept]
    saved = time.time()
    e2e.write_config(config)
    assert (await e2e.reloads.wait(saved)).ok

    async def dropped_out() -> bool:
        now = await children()
        return not now.get(dropped_id, {}).get("via")

    await eventually(dropped_out, "the dropped room left the space", timeout=15)
    now = await children()
    assert now[kept_id].get("via") and now[own.room_id].get("via") and now[dropped_id] == {}
