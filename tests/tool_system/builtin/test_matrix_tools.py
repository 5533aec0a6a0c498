"""The Matrix tools (`matrix_message`, `matrix_room`, `matrix_api`, `stop_reply`): as the calling agent's account,
in rooms it is in and the person may use it in, with no content speaking for anyone else and no write to the
room's security or membership."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.constants import ORIGINAL_SENDER_KEY, RuntimePaths
from mindroom.testing.recorded import SentEdit, SentMessage, SentReaction, SentRedaction, StateWrite
from mindroom.testing.recording_client import RecordingHomeserver
from mindroom.tool_system.builtin.matrix_api import matrix_api
from mindroom.tool_system.builtin.matrix_message import matrix_message
from mindroom.tool_system.builtin.matrix_room import matrix_room
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.builtin.stop_reply import stop_agent_reply
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context

pytestmark = pytest.mark.asyncio

HERE, LOBBY, VAULT, OUTSIDE = "!here:localhost", "!lobby:localhost", "!vault:localhost", "!outside:localhost"


class Rooms:
    """The agents' accounts on a recording homeserver: helper is in here, lobby and vault; alice may use it in the
    first two."""

    def __init__(self) -> None:
        self.server = RecordingHomeserver()
        self.clients = {name: self.server.client(name) for name in ("helper", "writer")}
        self.sent_events: list[tuple[str, str, str, dict[str, Any]]] = []
        self.stopped: list[tuple[str, str, str | None]] = []

    def client(self, agent: str) -> Any:
        return self.clients.get(agent)

    def joined(self, agent: str) -> set[str]:
        return {HERE, LOBBY, VAULT} if agent == "helper" else {HERE}

    def room_id(self, room: str) -> str:
        return {"lobby": LOBBY}.get(room, room)

    def agents_in_room(self, room_id: str) -> tuple[str, ...]:
        return ("helper", "writer") if room_id == HERE else ("helper",)

    def user_ids(self) -> Mapping[str, str]:
        return {name: client.user_id for name, client in self.clients.items()}

    def may_reach(self, user_id: str, room_id: str, entity: str) -> bool:
        return user_id == "@alice:localhost" and room_id in (HERE, LOBBY)

    def stop_reply(self, entity: str, room_id: str, thread_id: str | None) -> str | None:
        self.stopped.append((entity, room_id, thread_id))
        return "$streaming" if entity == "writer" else None

    async def send_event(self, agent: str, room_id: str, event_type: str, content: Mapping[str, Any]) -> str:
        self.sent_events.append((agent, room_id, event_type, dict(content)))
        return "$sent"


@pytest.fixture
def rooms(tmp_path: Path) -> Iterator[Rooms]:
    rooms = Rooms()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(rooms=rooms))  # type: ignore[arg-type]
    yield rooms
    withdraw()


def turn(tmp_path: Path, person: str = "@alice:localhost", room: str = HERE, thread: str | None = "$root"):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    return bind_runtime_context(ToolRuntimeContext(None, "helper", room, thread, person, runtime_paths=paths))


def payload(text: str) -> dict[str, Any]:
    return json.loads(text)


async def test_matrix_message_sends_in_the_conversation_and_asks_another_agent_for_the_person(tmp_path, rooms):
    with turn(tmp_path):
        here = payload(await matrix_message(message="hello"))
        timeline = payload(await matrix_message(message="to all", thread_id="room"))
        asked = payload(await matrix_message(message="please review", recipient="writer"))
        lobby = payload(await matrix_message(message="over there", room_id="lobby"))

    sent = [r for r in rooms.clients["helper"].records if isinstance(r, SentMessage)]
    assert [(m.room_id, m.thread_root, m.body) for m in sent] == [
        (HERE, "$root", "hello"),
        (HERE, None, "to all"),
        (HERE, "$root", "please review"),
        (LOBBY, None, "over there"),
    ]
    assert sent[2].content[ORIGINAL_SENDER_KEY] == "@alice:localhost"
    assert sent[2].content["m.mentions"]["user_ids"] == [rooms.clients["writer"].user_id]
    assert ORIGINAL_SENDER_KEY not in sent[0].content
    assert [here["status"], timeline["thread_id"], asked["recipient"], lobby["room_id"]] == [
        "ok",
        None,
        "writer",
        LOBBY,
    ]


@pytest.mark.parametrize(
    ("arguments", "person", "why"),
    [
        ({"room_id": OUTSIDE}, "@alice:localhost", "not in the room"),
        ({"room_id": VAULT}, "@alice:localhost", "may not use you in that room"),
        ({"room_id": "lobby"}, "@mallory:localhost", "may not use you in that room"),
        ({"recipient": "ghost"}, "@alice:localhost", "'ghost' is not available"),
        ({"recipient": "helper"}, "@alice:localhost", "yourself"),
        ({"new_thread": True, "thread_id": "$other"}, "@alice:localhost", "not both"),
        ({"attachments": ["att_1"]}, "@alice:localhost", "not offered"),
    ],
)
async def test_matrix_message_stays_within_its_bounds(tmp_path, rooms, arguments, person, why):
    with turn(tmp_path, person=person):
        answer = payload(await matrix_message(message="x", **arguments))

    assert answer["status"] == "error" and why in answer["message"]
    assert not [r for r in rooms.clients["helper"].records if isinstance(r, SentMessage)]


async def test_matrix_message_edits_only_its_own_messages_and_reacts(tmp_path, rooms):
    own = rooms.server.add(HERE, rooms.clients["helper"].user_id, "m.room.message", {"body": "typo"})
    theirs = rooms.server.message(HERE, "@alice:localhost", "mine")
    with turn(tmp_path):
        edited = payload(await matrix_message(action="edit", event_id=own.event_id, message="fixed"))
        refused = payload(await matrix_message(action="edit", event_id=theirs.event_id, message="hijacked"))
        reacted = payload(await matrix_message(action="react", event_id=theirs.event_id))

    records = rooms.clients["helper"].records
    assert [(r.target_event_id, r.body) for r in records if isinstance(r, SentEdit)] == [(own.event_id, "fixed")]
    assert [(r.target_event_id, r.key) for r in records if isinstance(r, SentReaction)] == [(theirs.event_id, "👍")]
    assert edited["status"] == "ok" and reacted["status"] == "ok"
    assert refused["status"] == "error" and "only your own" in refused["message"]


async def test_matrix_message_sends_are_rate_limited_per_room(tmp_path, rooms):
    with turn(tmp_path, room=LOBBY, thread=None):
        answers = [payload(await matrix_message(message=f"m{i}")) for i in range(13)]

    assert [a["status"] for a in answers] == ["ok"] * 12 + ["error"]
    assert "too many actions" in answers[-1]["message"]


async def test_matrix_room_lists_the_rooms_agents_and_state_without_members(tmp_path, rooms):
    rooms.server.state[(HERE, "m.room.topic", "")] = {"topic": "Tides"}
    with turn(tmp_path):
        agents = payload(await matrix_room(action="agents"))
        topic = payload(await matrix_room(action="state", event_type="m.room.topic"))
        far = payload(await matrix_room(action="room-info", room_id=VAULT))

    assert [a["name"] for a in agents["agents"]] == ["helper", "writer"]
    assert topic["content"] == {"topic": "Tides"}
    assert far["status"] == "error" and "may not use you" in far["message"]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"event_type": "m.room.message", "content": {"body": "x", ORIGINAL_SENDER_KEY: "@admin:localhost"}},
         "com.mindroom.original_sender"),
        ({"event_type": "m.room.message", "content": {"body": "x", "m.relates_to": {"io.mindroom.hops": 0}}},
         "io.mindroom.hops"),
        ({"event_type": "com.mindroom.handoff", "content": {}}, "daemon's own namespace"),
        ({"event_type": "m.room.encrypted", "content": {}}, "does not send"),
        ({"event_type": "m.room.power_levels", "content": {}}, "does not send"),
        ({"event_type": "m.room.message", "content": {}, "allow_dangerous": True}, "not offered"),
    ],
)  # fmt: skip
async def test_matrix_api_sends_no_content_that_speaks_for_others_and_no_protected_types(
    tmp_path, rooms, arguments, why
):
    with turn(tmp_path):
        answer = payload(await matrix_api(action="send_event", **arguments))

    assert answer["status"] == "error" and why in answer["message"]
    assert rooms.sent_events == []


@pytest.mark.parametrize(
    "event_type",
    ["m.room.power_levels", "m.room.join_rules", "m.room.encryption", "m.room.history_visibility", "m.room.member"],
)
async def test_matrix_api_never_writes_the_rooms_security(tmp_path, rooms, event_type):
    with turn(tmp_path):
        answer = payload(await matrix_api(action="put_state", event_type=event_type, content={"x": 1}))

    assert answer["status"] == "error" and "operator's" in answer["message"]
    assert not [r for r in rooms.clients["helper"].records if isinstance(r, StateWrite)]


async def test_matrix_api_writes_harmless_state_sends_events_and_redacts_only_its_own(tmp_path, rooms):
    own = rooms.server.add(HERE, rooms.clients["helper"].user_id, "m.room.message", {"body": "oops"})
    theirs = rooms.server.message(HERE, "@alice:localhost", "keep me")
    with turn(tmp_path):
        topic = payload(await matrix_api(action="put_state", event_type="m.room.topic", content={"topic": "New"}))
        dry = payload(
            await matrix_api(action="put_state", event_type="m.room.name", content={"name": "N"}, dry_run=True)
        )
        sent = payload(await matrix_api(action="send_event", event_type="m.room.message", content={"body": "hi"}))
        redacted = payload(await matrix_api(action="redact", event_id=own.event_id))
        refused = payload(await matrix_api(action="redact", event_id=theirs.event_id))

    records = rooms.clients["helper"].records
    assert [(r.event_type, r.content) for r in records if isinstance(r, StateWrite)] == [
        ("m.room.topic", {"topic": "New"})
    ]
    assert [r.target_event_id for r in records if isinstance(r, SentRedaction)] == [own.event_id]
    assert rooms.sent_events == [("helper", HERE, "m.room.message", {"body": "hi"})]
    assert [topic["status"], dry["dry_run"], sent["event_id"], redacted["redacted"]] == [
        "ok",
        True,
        "$sent",
        own.event_id,
    ]
    assert refused["status"] == "error" and "only your own" in refused["message"]


async def test_stop_reply_stops_another_agents_streaming_answer_for_the_person(tmp_path, rooms):
    with turn(tmp_path):
        stopped = payload(await stop_agent_reply("writer"))
        own = payload(await stop_agent_reply("helper"))
        idle = payload(await stop_agent_reply("researcher"))
    with turn(tmp_path, person="@mallory:localhost"):
        outsider = payload(await stop_agent_reply("writer"))

    assert stopped == {
        "agent": "writer",
        "reply_event_id": "$streaming",
        "room_id": HERE,
        "status": "ok",
        "thread_id": "$root",
        "tool": "stop_reply",
    }
    assert "your own reply" in own["message"] and "no reply in progress" in idle["message"]
    assert outsider["status"] == "error"
    assert rooms.stopped == [("writer", HERE, "$root"), ("researcher", HERE, "$root")]
