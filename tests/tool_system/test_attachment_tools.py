"""`read_attachment`: text of files sent into the agent's rooms, nothing of other rooms."""

from __future__ import annotations

import pytest

from mindroom.state.attachments import AttachmentStore
from mindroom.tool_system.attachment_tools import MAX_ATTACHMENT_CHARS, attachment_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError


def tool(tmp_path, rooms=("!mine:localhost",)):
    store = AttachmentStore(tmp_path)
    env = AgentToolEnvironment("helper", tmp_path / "ws", joined_rooms=lambda: set(rooms), attachments=store)
    (spec,) = attachment_tools(env)
    return store, spec.function


def put(store, data, *, name="notes.txt", mimetype="text/plain", room="!mine:localhost"):
    return store.put(data, name=name, mimetype=mimetype, room_id=room, event_id="$e").attachment_id


def test_read_attachment_gives_the_text_of_a_text_file(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"hello from a file\n")

    assert read(attachment) == "notes.txt (text/plain, 18 bytes):\nhello from a file\n"


def test_read_attachment_describes_a_binary_file(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"\x89PNG...", name="dot.png", mimetype="image/png")

    assert "dot.png (image/png, 7 bytes): not a text file" in read(attachment)


@pytest.mark.parametrize(
    "attachment_of",
    [
        pytest.param(lambda store: put(store, b"secret", room="!other:localhost"), id="another-rooms-file"),
        pytest.param(lambda store: "0" * 32, id="unknown-id"),
        pytest.param(lambda store: "../../etc/passwd", id="a-path"),
    ],
)
def test_read_attachment_refuses_what_is_not_in_the_agents_rooms(tmp_path, attachment_of):
    store, read = tool(tmp_path)

    with pytest.raises(ToolError, match="there is no attachment"):
        read(attachment_of(store))


def test_read_attachment_cuts_long_text(tmp_path):
    store, read = tool(tmp_path)
    attachment = put(store, b"x" * (MAX_ATTACHMENT_CHARS + 10))

    assert read(attachment).endswith(f"[... cut at {MAX_ATTACHMENT_CHARS} characters]")
