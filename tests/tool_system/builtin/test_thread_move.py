"""The `thread_move` tool: the gist in another room the agent is in, a link back, tags copied, the original
resolved; never from an encrypted room into a plain one. The `thread_model` tool: `!model` from a tool."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.matrix.thread_summaries import send_summary
from mindroom.matrix.thread_tags import RESOLVED_TAG, THREAD_TAGS_EVENT_TYPE, state_key
from mindroom.testing.recorded import SentMessage
from mindroom.tool_system.builtin.parts import DaemonParts, ToolCaller, provide_daemon_parts
from mindroom.tool_system.builtin.thread_model import get_thread_model, reset_thread_model, switch_thread_model
from mindroom.tool_system.builtin.thread_move import move_thread
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError
from tests.bots.test_thread_summaries import ThreadClient

HERE, THERE, PLAIN, ELSEWHERE = "!here:localhost", "!there:localhost", "!plain:localhost", "!else:localhost"
ALICE = "@alice:localhost"


class Member(ThreadClient):
    async def room_members(self, room_id: str) -> list[str]:
        return [self.user_id, ALICE]


class Rooms:
    """The helper agent in here, there and plain (here and there encrypted); alice may use it everywhere."""

    def __init__(self) -> None:
        from mindroom.testing.recording_client import RecordingHomeserver

        self.server = RecordingHomeserver()
        self.clients = {name: Member(self.server, name) for name in ("helper", "router")}
        for room in (HERE, THERE, PLAIN):
            levels = {"users": {self.clients["router"].user_id: 100, ALICE: 50}, "state_default": 50}
            self.server.state[(room, "m.room.power_levels", "")] = levels
        for room in (HERE, THERE):
            self.server.state[(room, "m.room.encryption", "")] = {"algorithm": "m.megolm.v1.aes-sha2"}
        self.root = self.server.message(HERE, ALICE, "the build is red").event_id
        self.server.message(HERE, self.clients["helper"].user_id, "looking", thread_root=self.root)
        tag = {"set_by": ALICE, "set_at": "2026-11-29T10:00:00Z", "data": {}, "note": "CI only"}
        self.server.state[(HERE, THREAD_TAGS_EVENT_TYPE, state_key(self.root, "bug"))] = tag

    def client(self, agent: str) -> Any:
        return self.clients.get(agent)

    def joined(self, agent: str) -> set[str]:
        return {HERE, THERE, PLAIN}

    def room_id(self, room: str) -> str:
        return {"there": THERE, "plain": PLAIN}.get(room, room)

    def user_ids(self) -> Mapping[str, str]:
        return {name: client.user_id for name, client in self.clients.items()}

    def may_reach(self, user_id: str, room_id: str, entity: str) -> bool:
        return user_id == ALICE


class Settings:
    """A settings port that records thread changes (administrators: alice)."""

    def __init__(self) -> None:
        self.changes: list[tuple[str | None, str, Any]] = []
        self.value: Any = None

    async def change_thread(self, caller: ToolCaller, key: str, value: Any) -> list[str]:
        if caller.requester_id != ALICE:
            return ["only administrators may change settings"]
        self.changes.append((caller.thread_id, key, value))
        return []

    def thread_setting(self, caller: ToolCaller, key: str) -> Any:
        return self.value


@pytest.fixture
def rooms(tmp_path: Path) -> Iterator[tuple[Rooms, Settings]]:
    rooms, settings = Rooms(), Settings()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(rooms=rooms, settings=settings))  # type: ignore[arg-type]
    yield rooms, settings
    withdraw()


def turn(tmp_path: Path, thread: str | None, person: str = ALICE):
    models = {"default": {"provider": "openai", "id": "m"}, "fast": {"provider": "openai", "id": "fast-model"}}
    config = Config.model_validate({"models": models, "agents": {"helper": {"display_name": "Helper"}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    context = ToolRuntimeContext(None, "helper", HERE, thread, person, runtime_paths=paths, config=config)
    return bind_runtime_context(context)


@pytest.mark.asyncio
async def test_move_thread_posts_the_gist_with_a_link_back_copies_tags_and_resolves_the_original(tmp_path, rooms):
    world, _ = rooms
    helper = world.clients["helper"]
    await send_summary(helper, HERE, world.root, "Build red on CI.", 2, "summary")
    with turn(tmp_path, world.root):
        moved = json.loads(await move_thread("there"))

    sent = [r for r in helper.records if isinstance(r, SentMessage)]
    copy, notice = sent[-2], sent[-1]
    assert moved["status"] == "ok" and moved["room_id"] == THERE and moved["tags_copied"] == ["bug"]
    assert copy.room_id == THERE and copy.thread_root is None
    assert (
        copy.body.startswith("🧵 Moved from https://matrix.to/#/%21here%3Alocalhost/") and "(2 messages)" in copy.body
    )
    assert "Summary: Build red on CI." in copy.body and f"{ALICE}: the build is red" in copy.body
    assert (notice.room_id, notice.thread_root, notice.body) == (HERE, world.root, f"Moved to {moved['link']}")
    state = world.server.state
    assert state[(THERE, THREAD_TAGS_EVENT_TYPE, state_key(moved["thread_id"], "bug"))]["note"] == "CI only"
    assert state[(HERE, THREAD_TAGS_EVENT_TYPE, state_key(world.root, RESOLVED_TAG))]["set_by"] == ALICE


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("room", "why"), [("plain", "not encrypted"), (ELSEWHERE, "not in the room"), (HERE, "already")]
)
async def test_move_thread_refuses_a_plain_room_one_it_is_not_in_and_its_own(tmp_path, rooms, room, why):
    world, _ = rooms
    with turn(tmp_path, world.root), pytest.raises(ToolError, match=why):
        await move_thread(room)
    assert not [r for r in world.clients["helper"].records if isinstance(r, SentMessage)]


@pytest.mark.asyncio
async def test_thread_model_switches_and_resets_the_threads_model_through_the_settings(tmp_path, rooms):
    _, settings = rooms
    with turn(tmp_path, "$root"):
        switched = json.loads(await switch_thread_model("fast"))
        settings.value = "fast"
        current = json.loads(await get_thread_model())
        reset = json.loads(await reset_thread_model())
    with turn(tmp_path, "$root", person="@bob:localhost"):
        refused = json.loads(await switch_thread_model("fast"))

    assert (switched["status"], current["model"], reset["action"]) == ("ok", "fast", "reset")
    assert settings.changes == [("$root", "model", "fast"), ("$root", "model", None)]
    assert refused["status"] == "error" and "administrators" in refused["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("thread", "name", "when", "why"),
    [
        ("$root", "fast-model", "next-turn", "unknown model"),  # the model's id, not its name
        ("$root", "fast", "after-toolcall", "next-turn"),
        (None, "fast", "next-turn", "not in one"),
    ],
)
async def test_thread_model_refuses_near_misses(tmp_path, rooms, thread, name, when, why):
    _, settings = rooms
    with turn(tmp_path, thread), pytest.raises(ToolError, match=why):
        await switch_thread_model(name, when)
    assert settings.changes == []
