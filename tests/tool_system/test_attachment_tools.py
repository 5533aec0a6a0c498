"""`read_attachment`: text of files sent into the room the turn runs in, nothing of other rooms."""

from __future__ import annotations

import hashlib
import json

import pytest

from mindroom.hooks import HookRegistry
from mindroom.state.attachments import ATTACHMENTS_DIRNAME, AttachmentStore
from mindroom.tool_system.attachment_tools import MAX_ATTACHMENT_CHARS, attachment_tools
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError

LOBBY = "!lobby:localhost"
DM = "!dm-with-bob:localhost"


def tool(tmp_path, rooms=(LOBBY, DM)):
    store = AttachmentStore(tmp_path)
    env = AgentToolEnvironment("helper", tmp_path / "ws", joined_rooms=lambda: set(rooms), attachments=store)
    (spec,) = attachment_tools(env)
    return store, spec.function


def in_room(read, room_id, attachment_id, *, thread_id=None):
    """`read_attachment` as a turn in `room_id` calls it (the turn binds its runtime context)."""
    context = ToolRuntimeContext(
        registry=HookRegistry.empty(), agent_name="helper", room_id=room_id, thread_id=thread_id
    )
    with bind_runtime_context(context):
        return read(attachment_id)


def put(store, data, *, name="notes.txt", mimetype="text/plain", room=LOBBY):
    return store.put(data, name=name, mimetype=mimetype, room_id=room, event_id="$e").attachment_id


def test_read_attachment_gives_the_text_of_a_text_file(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"hello from a file\n")

    assert in_room(read, LOBBY, attachment) == "notes.txt (text/plain, 18 bytes):\nhello from a file\n"


def test_read_attachment_describes_a_binary_file(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"\x89PNG...", name="dot.png", mimetype="image/png")

    assert "dot.png (image/png, 7 bytes): not a text file" in in_room(read, LOBBY, attachment)


def test_read_attachment_reads_in_any_thread_of_the_files_room(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"shared with the room\n")

    assert in_room(read, LOBBY, attachment, thread_id="$another-thread").endswith("shared with the room\n")


@pytest.mark.parametrize(
    "attachment_of",
    [
        pytest.param(lambda store: put(store, b"secret", room="!other:localhost"), id="a-room-the-agent-left"),
        pytest.param(lambda store: put(store, b"bob's contract", room=DM), id="another-joined-rooms-file"),
        pytest.param(lambda store: "0" * 32, id="unknown-id"),
        pytest.param(lambda store: "../../etc/passwd", id="a-path"),
    ],
)
def test_read_attachment_refuses_what_is_not_of_the_turns_room(tmp_path, attachment_of):
    store, read = tool(tmp_path)

    with pytest.raises(ToolError, match="there is no attachment"):
        in_room(read, LOBBY, attachment_of(store))


def test_read_attachment_refuses_a_file_of_a_dm_asked_for_from_the_lobby(tmp_path):
    """The agent is in both rooms; a lobby member who learns the id of a file Bob sent in his DM gets nothing."""
    store, read = tool(tmp_path)
    attachment = put(store, b"bob's contract", room=DM)

    with pytest.raises(ToolError, match="there is no attachment") as refused:
        in_room(read, LOBBY, attachment)

    assert "bob" not in str(refused.value)
    assert in_room(read, DM, attachment).endswith("bob's contract")


def test_read_attachment_refuses_outside_a_turn(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"hello")

    with pytest.raises(ToolError, match="there is no attachment"):
        read(attachment)


def test_read_attachment_reads_a_record_stored_when_ids_came_from_the_content(tmp_path):
    """Attachments stored before ids were random (`sha256(content)[:32]`) stay readable, in their room only."""
    _, read = tool(tmp_path)
    data = b"kept from before\n"
    old_id = hashlib.sha256(data).hexdigest()[:32]
    folder = tmp_path / ATTACHMENTS_DIRNAME
    folder.mkdir()
    (folder / old_id).write_bytes(data)
    record = {
        "attachment_id": old_id,
        "name": "old.txt",
        "mimetype": "text/plain",
        "size": len(data),
        "room_id": DM,
        "event_id": "$old",
        "stored_at": 1.0,
    }
    (folder / f"{old_id}.json").write_text(json.dumps(record) + "\n")

    assert in_room(read, DM, old_id) == "old.txt (text/plain, 17 bytes):\nkept from before\n"
    with pytest.raises(ToolError, match="there is no attachment"):
        in_room(read, LOBBY, old_id)


def test_read_attachment_cuts_long_text(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"x" * (MAX_ATTACHMENT_CHARS + 10))

    assert in_room(read, LOBBY, attachment).endswith(f"[... cut at {MAX_ATTACHMENT_CHARS} characters]")
