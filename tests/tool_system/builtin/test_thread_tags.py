"""The `thread_tags` and `thread_resolution` tools: for the person the turn speaks for, in the room's state,
within the vocabulary the agent's entry names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.matrix.thread_tags import THREAD_TAGS_EVENT_TYPE
from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver
from mindroom.tool_system.builtin.groups import GROUP_FUNCTIONS
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.builtin.thread_tags import (
    list_thread_tags,
    reopen_thread,
    resolve_thread,
    tag_thread,
    untag_thread,
)
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError
from mindroom.tool_system.tool_names import LATER

ROOM = "!room:localhost"
ALICE, BOB = "@alice:localhost", "@bob:localhost"


class Member(RecordingClient):
    async def room_members(self, room_id: str) -> list[str]:
        return [self.user_id, ALICE, BOB]


class Rooms:
    """The helper agent (no power) and the router (which made the room) on one recording homeserver."""

    def __init__(self) -> None:
        self.server = RecordingHomeserver()
        self.clients = {name: Member(self.server, name) for name in ("helper", "router")}
        levels = {"users": {self.clients["router"].user_id: 100, ALICE: 50}, "state_default": 50}
        self.server.state[(ROOM, "m.room.power_levels", "")] = levels
        self.root = self.server.message(ROOM, ALICE, "the build is red")
        self.reply = self.server.message(ROOM, BOB, "seen it", thread_root=self.root.event_id)

    def client(self, agent: str) -> Any:
        return self.clients.get(agent)

    def tags(self) -> dict[str, dict[str, Any]]:
        state = self.server.state
        return {key: content for (room, kind, key), content in state.items() if kind == THREAD_TAGS_EVENT_TYPE}


@pytest.fixture
def rooms(tmp_path: Path) -> Iterator[Rooms]:
    rooms = Rooms()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(rooms=rooms))  # type: ignore[arg-type]
    yield rooms
    withdraw()


def turn(tmp_path: Path, thread: str | None, person: str = ALICE, tags: list[str] | None = None):
    entry: Any = {"thread_tags": {"tags": tags}} if tags is not None else "thread_tags"
    config = Config.model_validate({"agents": {"helper": {"display_name": "Helper", "tools": [entry]}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    context = ToolRuntimeContext(None, "helper", ROOM, thread, person, runtime_paths=paths, config=config)
    return bind_runtime_context(context)


def test_thread_tools_are_built_in_groups_not_later():
    assert GROUP_FUNCTIONS["thread_tags"][1] == ("list_thread_tags", "tag_thread", "untag_thread")
    assert GROUP_FUNCTIONS["thread_resolution"][1] == ("resolve_thread", "reopen_thread")
    assert "thread_tags" not in LATER and "thread_resolution" not in LATER


@pytest.mark.asyncio
async def test_tag_thread_tags_the_turns_thread_for_the_person_through_the_router(tmp_path, rooms):
    root = rooms.root.event_id
    with turn(tmp_path, root, tags=["bug", "blocked"]):
        tagged = json.loads(await tag_thread("Bug", note="CI only"))
        listed = json.loads(await list_thread_tags())
        by_tag = json.loads(await list_thread_tags(tag="bug"))
        untagged = json.loads(await untag_thread("bug"))

    assert tagged["status"] == "ok" and tagged["thread_id"] == root
    assert tagged["tags"]["bug"]["set_by"] == ALICE and tagged["tags"]["bug"]["note"] == "CI only"
    assert list(listed["tags"]) == ["bug"]
    assert list(by_tag["threads"]) == [root]
    assert untagged["removed"] is True and untagged["tags"] == {}
    assert rooms.tags() == {json.dumps([root, "bug"], separators=(",", ":")): {}}
    assert [r.state_key for r in rooms.clients["router"].records if hasattr(r, "state_key")]


@pytest.mark.asyncio
async def test_tag_thread_refuses_a_tag_outside_the_vocabulary(tmp_path, rooms):
    with turn(tmp_path, rooms.root.event_id, tags=["bug", "blocked"]), pytest.raises(ToolError, match="vocabulary"):
        await tag_thread("bugs")  # one letter off
    assert rooms.tags() == {}


@pytest.mark.asyncio
async def test_tag_thread_refuses_a_person_the_room_does_not_allow(tmp_path, rooms):
    with turn(tmp_path, rooms.root.event_id, person=BOB):
        refused = json.loads(await tag_thread("bug"))

    assert refused["status"] == "error" and "may not change thread tags" in refused["message"]
    assert rooms.tags() == {}


@pytest.mark.asyncio
async def test_resolve_and_reopen_a_thread_named_by_one_of_its_replies(tmp_path, rooms):
    root, reply = rooms.root.event_id, rooms.reply.event_id
    with turn(tmp_path, None):
        resolved = json.loads(await resolve_thread(thread_id=reply))
        state_after_resolve = dict(rooms.tags())
        reopened = json.loads(await reopen_thread(thread_id=reply))

    key = json.dumps([root, "resolved"], separators=(",", ":"))
    assert (resolved["status"], resolved["thread_id"], resolved["resolved"]) == ("ok", root, True)
    assert state_after_resolve[key]["set_by"] == ALICE
    assert (reopened["status"], reopened["resolved"]) == ("ok", False)
    assert rooms.tags() == {key: {}}


@pytest.mark.asyncio
async def test_thread_tools_outside_a_thread_need_a_thread_id(tmp_path, rooms):
    with turn(tmp_path, None), pytest.raises(ToolError, match="thread_id is needed"):
        await resolve_thread()


@pytest.mark.asyncio
async def test_resolved_is_not_a_tag_of_thread_tags(tmp_path, rooms):
    with turn(tmp_path, rooms.root.event_id), pytest.raises(ToolError, match="resolve_thread"):
        await tag_thread("resolved")
