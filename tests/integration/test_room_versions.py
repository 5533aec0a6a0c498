"""Rooms of version 12 on a real Synapse: creators outrank every power level and are not listed in them. An
encrypted v12 DM is answered; the daemon's own v12 room is known as its own from its create event alone; a
stranger's v12 room stays the stranger's whatever power it hands the router."""

from __future__ import annotations

import nio
import pytest
from structlog.testing import capture_logs

from mindroom.testing.model_server import Echo
from tests.integration.conftest import E2E
from tests.integration.support import ENCRYPTION_STATE, thread_replies
from tests.integration.test_crypto_recovery import encrypted_human

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _state(e2e: E2E, room_id: str, event_type: str, bot: str = "router") -> dict:
    assert e2e.daemon is not None
    content = await e2e.daemon.bots[bot].client.get_room_state(room_id, event_type, "")
    assert content is not None
    return content


async def test_room_versions_an_encrypted_v12_dm_is_answered(e2e: E2E):
    human = await encrypted_human(e2e)
    agent = e2e.name("helper")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": []}})
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")
    await e2e.start(config, watch=False)
    agent_id = e2e.user_id(agent)

    created = await human.client.room_create(
        room_version="12",
        is_direct=True,
        preset=nio.RoomPreset.trusted_private_chat,
        invite=[agent_id],
        initial_state=[ENCRYPTION_STATE],
    )
    assert isinstance(created, nio.RoomCreateResponse), created
    room_id = str(created.room_id)
    await human.wait_for_member(room_id, agent_id)
    question = await human.send(room_id, "hello in a v12 room")
    reply = await human.wait_for(thread_replies(question, agent_id), timeout=30)

    assert reply.get("decrypted") is True and reply["content"]["body"].startswith("echo: hello in a v12 room")
    create = await _state(e2e, room_id, "m.room.create", agent)
    assert create["room_version"] == "12" and agent_id in create["additional_creators"]
    levels = await _state(e2e, room_id, "m.room.power_levels", agent)
    assert human.user_id not in levels.get("users", {}) and agent_id not in levels.get("users", {})


async def test_room_versions_the_daemons_v12_room_is_its_own_and_a_strangers_is_not(e2e: E2E):
    operator = await e2e.human("operator")
    stranger = await e2e.human("stranger")
    agent, room, alerts = e2e.name("helper"), e2e.name("room"), e2e.name("alerts")
    router_id = f"@{e2e.account_prefix}router:{e2e.homeserver.server_name}"
    squatted = await stranger.client.room_create(
        alias=alerts,
        room_version="12",
        visibility=nio.RoomVisibility.public,
        power_level_override={"users": {router_id: 100}},  # the most power a v12 creator can hand out
    )
    assert isinstance(squatted, nio.RoomCreateResponse), squatted
    await stranger.client.room_put_state(squatted.room_id, "m.room.join_rules", {"join_rule": "public"})
    config = e2e.basic_config([operator.user_id], {agent: {"display_name": "Helper", "rooms": [room, alerts]}})

    with capture_logs() as logs:
        daemon = await e2e.start(config, watch=False)

    assert daemon.running is not None and alerts not in daemon.running.directory.room_ids
    refused = [e for e in logs if e["event"] == "room alias belongs to an account outside this daemon; not using it"]
    assert [entry["room_id"] for entry in refused] == [squatted.room_id]
    own = daemon.running.directory.room_ids[room]
    create = await _state(e2e, own, "m.room.create")
    levels = await _state(e2e, own, "m.room.power_levels")
    assert create["room_version"] == "12" and router_id not in levels.get("users", {})
    await e2e.stop()
    (e2e.storage / "state" / "rooms.db").unlink()  # the daemon forgets which rooms it made

    with capture_logs() as logs:
        daemon = await e2e.start(config, watch=False)

    assert daemon.running is not None and daemon.running.directory.room_ids[room] == own  # known by its create event
    assert [e["room_id"] for e in logs if e["event"].startswith("room alias belongs")] == [squatted.room_id]
