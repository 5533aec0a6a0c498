"""Configured rooms on a real homeserver: an alias someone else took first is never used."""

from __future__ import annotations

import nio
import pytest
from structlog.testing import capture_logs

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

    assert daemon.runtime is not None
    assert alerts not in daemon.runtime.room_ids and room in daemon.runtime.room_ids
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

    own = daemon.runtime.room_ids[room]
    await e2e.stop()
    daemon = await e2e.start(config, watch=False)  # a restart keeps using the room the daemon made
    assert daemon.runtime is not None and daemon.runtime.room_ids[room] == own
