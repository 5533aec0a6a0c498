"""room:member_joined and room:member_left on a real Synapse: fired by the router alone, for people only.

A person joining and leaving a managed room is announced once each; a profile change and an agent
leaving and joining again are not.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nio
import pytest

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

MEMBERS = """
import json
from pathlib import Path

from mindroom.hooks import hook


def _log(ctx):
    record = {
        "event": ctx.event_name, "agent": ctx.agent_name, "room": ctx.room_id, "event_id": ctx.event_id,
        "user": ctx.user_id, "sender": ctx.sender_id, "name": ctx.display_name, "avatar": ctx.avatar_url,
        "membership": ctx.membership, "prev": ctx.prev_membership, "correlation": ctx.correlation_id,
    }
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps(record) + "\\n")


@hook("room:member_joined")
async def joined(ctx):
    _log(ctx)


@hook("room:member_left")
async def left(ctx):
    _log(ctx)
"""


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _records_now(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _lines(log)]


async def _records(log: Path, count: int) -> list[dict[str, Any]]:
    """The hook log once it holds at least `count` records."""
    lines = await eventually(lambda: len(_lines(log)) >= count and _lines(log), f"{count} hook records")
    return [json.loads(line) for line in lines]


async def test_people_joining_and_leaving_are_announced_once_by_the_router(e2e: E2E, tmp_path: Path):
    log = tmp_path / "members.jsonl"
    e2e.plugin("members", MEMBERS)
    alice = await e2e.human()
    bob = await e2e.human("bob")
    helper, coder, room = e2e.name("helper"), e2e.name("coder"), e2e.name("room")
    config = e2e.basic_config(
        [alice.user_id],
        {
            helper: {"display_name": "Helper", "role": "Helps.", "rooms": [room]},
            coder: {"display_name": "Coder", "role": "Codes.", "rooms": [room]},
        },
        plugins=[{"path": "plugins/members", "settings": {"log": str(log)}}],
        # Nobody is invited at startup: whether a join then falls before or after the router's first
        # sync (present at startup, or news) would be a race.
        room_defaults={"invite_users": []},
    )
    daemon = await e2e.start(config)
    assert daemon.running is not None
    room_id = e2e.room_id(room)
    await daemon.bots[ROUTER_AGENT_NAME].client.invite(room_id, alice.user_id)
    await e2e.joined(alice, room_id)  # the harness accepts invites
    await _records(log, 1)

    invited = await alice.client.room_invite(room_id, bob.user_id)
    assert isinstance(invited, nio.RoomInviteResponse), invited
    await e2e.joined(bob, room_id)
    renamed = await bob.client.set_displayname("Bobby")  # a profile change: join -> join, not announced
    assert isinstance(renamed, nio.ProfileSetDisplayNameResponse), renamed
    await alice.wait_for(lambda ev: _member_of(ev, bob.user_id) and ev["content"].get("displayname") == "Bobby")
    # An agent leaving and joining again (invited by the router, it accepts) is no person's doing.
    helper_user = e2e.user_id(helper)
    await daemon.bots[helper].leave(room_id)
    await daemon.bots[ROUTER_AGENT_NAME].client.invite(room_id, helper_user)
    await alice.wait_for(lambda ev: _member_of(ev, helper_user) and ev["content"].get("membership") == "join"
                         and ev.get("unsigned", {}).get("prev_content", {}).get("membership") == "invite")  # fmt: skip
    left = await bob.client.room_leave(room_id)
    assert isinstance(left, nio.RoomLeaveResponse), left
    await _records(log, 3)
    await e2e.settle(alice, room_id)  # anything fired late (a second delivery) shows by now

    records = _records_now(log)
    assert [(r["event"], r["user"], r["sender"], r["membership"], r["prev"]) for r in records] == [
        ("room:member_joined", alice.user_id, alice.user_id, "join", "invite"),
        ("room:member_joined", bob.user_id, bob.user_id, "join", "invite"),
        ("room:member_left", bob.user_id, bob.user_id, "leave", "join"),
    ]
    assert all(r["agent"] == ROUTER_AGENT_NAME and r["room"] == room_id for r in records)
    assert all(r["correlation"] == r["event_id"] for r in records)
    bob_joined, bob_left = records[1], records[2]
    joins = [ev for ev in alice.events if _member_of(ev, bob.user_id) and ev["content"].get("membership") == "join"]
    assert bob_joined["event_id"] == joins[0]["event_id"]
    assert bob_joined["name"] == joins[0]["content"].get("displayname") != "Bobby"
    assert bob_left["name"] == "Bobby"  # from the content before the leave
    journal = daemon.running.stores.journal
    assert all(journal.seen(ROUTER_AGENT_NAME, r["event_id"]) for r in records)
    assert journal.pending(ROUTER_AGENT_NAME) == []


def _member_of(event: dict[str, Any], user_id: str) -> bool:
    return event.get("type") == "m.room.member" and event.get("state_key") == user_id


async def test_members_access_by_membership_turned_on_by_a_reload_admits_members_of_running_agents_rooms(e2e: E2E):
    ana, bob = await e2e.human("ana"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([ana.user_id], {agent: {"display_name": "Helper", "model": "default", "rooms": [room]}})
    config["room_defaults"]["invite_users"] = [ana.user_id, bob.user_id]
    e2e.model_server.set_default(Text("Hello, member."), model="agent-model")
    await e2e.start(config)
    room_id, agent_id = e2e.room_id(room), e2e.user_id(agent)
    await e2e.joined(bob, room_id)
    running_agent = e2e.daemon.bots[agent]

    # Without this daemon's three authorization keys, MindRoom's defaults hold: an agent admits its rooms' members.
    del config["authorization"]
    saved = time.time()
    e2e.write_config(config)
    outcome = await e2e.reloads.wait(saved)
    assert outcome.ok and e2e.daemon.bots[agent] is running_agent  # the agent itself did not restart

    asked = await bob.send(room_id, "may I ask now?", mentions=[agent_id])
    reply = await bob.wait_for(thread_replies(asked, agent_id))
    assert reply["content"]["body"] == "Hello, member."
