"""Threads people find again, on the real homeserver: tags and resolution set by command and by tool are room
state other clients read, only people the room allows change them, and they survive a restart."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from mindroom.matrix.thread_tags import THREAD_TAGS_EVENT_TYPE
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def threads_config(e2e: E2E, alice: str, bob: str, agent: str, room: str) -> dict[str, Any]:
    tools = [{"thread_tags": {"tags": ["bug", "blocked"]}}, "thread_resolution"]
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": tools}}
    config = e2e.basic_config([alice, bob], agents)
    config["room_defaults"]["admins"] = [alice]  # alice may change thread tags; bob (power 0) may not
    return config


async def command(e2e: E2E, human: HumanClient, room_id: str, text: str, thread_root: str) -> str:
    """Send a command in a thread; the router's answer to it."""
    sent = await human.send(room_id, text, thread_root=thread_root)

    def answer(event: dict[str, Any]) -> bool:
        relates = event.get("content", {}).get("m.relates_to", {})
        return thread_replies(thread_root, e2e.user_id("router"))(event) and (
            relates.get("m.in_reply_to", {}).get("event_id") == sent
        )

    return str((await human.wait_for(answer))["content"]["body"])


async def room_tags(human: HumanClient, room_id: str) -> dict[str, dict[str, Any]]:
    """The thread tag state events of the room as `human`'s own client reads them: state key -> content."""
    path = f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/state"
    headers = {"Authorization": f"Bearer {human.client.access_token}"}
    body = await (await human.client.send("GET", path, None, headers)).json()
    return {e["state_key"]: e["content"] for e in body if e.get("type") == THREAD_TAGS_EVENT_TYPE}


def key(root: str, tag: str) -> str:
    return json.dumps([root, tag], separators=(",", ":"))


async def test_thread_tags_and_resolution_by_command_and_tool_are_room_state_that_survives_a_restart(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = threads_config(e2e, alice.user_id, bob.user_id, agent, room)
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    e2e.model_server.script(
        ToolCall("tag_thread", {"tag": "bug", "note": "CI only"}),
        ToolCall("resolve_thread", {}),
        Text("Tagged and resolved."),
        model="agent-model",
    )

    root = await alice.send(room_id, "the build is red; tag it and close it", mentions=[e2e.user_id(agent)])
    answer = await alice.wait_for(thread_replies(root, e2e.user_id(agent)))
    tagged = await command(e2e, alice, room_id, "!tag blocked waiting on infra", root)
    outside = await command(e2e, alice, room_id, "!tag bugs", root)  # one letter off the vocabulary
    refused = await command(e2e, bob, room_id, "!tag remove bug", root)

    assert answer["content"]["body"] == "Tagged and resolved."
    assert tagged.startswith("Tagged `blocked`.")
    assert "not one of this room's tags" in outside
    assert "may not change thread tags" in refused
    seen_by_bob = await room_tags(bob, room_id)
    assert seen_by_bob[key(root, "bug")]["set_by"] == alice.user_id  # the tool acts for the person it serves
    assert seen_by_bob[key(root, "bug")]["note"] == "CI only"
    assert seen_by_bob[key(root, "blocked")]["note"] == "waiting on infra"
    assert seen_by_bob[key(root, "resolved")]["set_by"] == alice.user_id
    assert key(root, "bugs") not in seen_by_bob

    await e2e.stop()
    await e2e.start(config)

    listed = await command(e2e, alice, room_id, "!tag", root)
    reopened = await command(e2e, alice, room_id, "!reopen", root)
    removed = await command(e2e, alice, room_id, "!tag remove bug", root)

    assert listed == "This thread has `blocked`, `bug`, `resolved`."
    assert reopened == "This thread is open again."
    assert removed == "Removed `bug`."
    after = await room_tags(bob, room_id)
    assert after[key(root, "resolved")] == {} and after[key(root, "bug")] == {}
    assert after[key(root, "blocked")]["set_by"] == alice.user_id
