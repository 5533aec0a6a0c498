"""Thread exports: messages with authors, times and attachments by name, the summary and the tags, written as
Markdown and JSON into private files."""

from __future__ import annotations

import json
import stat

import pytest

from mindroom.bots.thread_export import ThreadExport, export_folder, read_thread, write_export
from mindroom.matrix.thread_summaries import send_summary
from mindroom.matrix.thread_tags import THREAD_TAGS_EVENT_TYPE, state_key
from mindroom.testing.recording_client import RecordingHomeserver
from tests.bots.test_thread_summaries import ROOM, ThreadClient

ALICE = "@alice:localhost"


@pytest.mark.asyncio
async def test_read_thread_and_write_export_as_markdown_and_json_in_private_files(tmp_path):
    server = RecordingHomeserver()
    helper = ThreadClient(server, "helper")
    root = server.message(ROOM, ALICE, "the build is red", at_ms=1_764_400_000_000).event_id
    server.message(ROOM, helper.user_id, "looking", thread_root=root, at_ms=1_764_400_060_000)
    file = {"msgtype": "m.file", "body": "the log", "filename": "ci.log", "url": "mxc://localhost/log"}
    server.message(ROOM, ALICE, "", thread_root=root, extra_content=file, at_ms=1_764_400_120_000)
    image = {"msgtype": "m.image", "body": "shot.png", "url": "mxc://localhost/shot"}
    server.message(ROOM, ALICE, "", thread_root=root, extra_content=image, at_ms=1_764_400_130_000)
    await send_summary(helper, ROOM, root, "CI red; log attached.", 4, "summary")
    tag = {"set_by": ALICE, "set_at": "2026-11-29T10:00:00Z", "data": {}}
    server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, state_key(root, "bug"))] = tag

    exported = await read_thread(helper, ROOM, root, {helper.user_id})
    markdown, data = write_export(exported, export_folder(tmp_path))

    parsed = json.loads(data.read_text())
    assert [(m["author"], m["text"], m["attachments"]) for m in parsed["messages"]] == [
        (ALICE, "the build is red", []),
        (helper.user_id, "looking", []),
        (ALICE, "the log", ["ci.log"]),  # a body beside a file name is its caption
        (ALICE, "", ["shot.png"]),
    ]
    assert parsed["messages"][0]["sent_at"] == "2025-11-29T07:06:40+00:00"
    assert (parsed["summary"], list(parsed["tags"]), parsed["resolved"]) == ("CI red; log attached.", ["bug"], False)
    text = markdown.read_text()
    assert "- Summary: CI red; log attached." in text and "- Attachment: ci.log" in text and "`bug`" in text
    for path in (markdown, data):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert markdown.parent.parent == tmp_path / "thread_exports" and "!" not in markdown.parent.name


@pytest.mark.asyncio
async def test_read_thread_of_an_unknown_root_is_a_lookup_error(tmp_path):
    helper = ThreadClient(RecordingHomeserver(), "helper")

    with pytest.raises(LookupError, match=r"no thread \$nothing"):
        await read_thread(helper, ROOM, "$nothing", {helper.user_id})


@pytest.mark.parametrize(("room_id", "thread_id"), [("..", ".."), ("!room:hs", "../../escape"), (".hidden", "$.x.")])
def test_write_export_keeps_every_name_inside_the_export_folder(tmp_path, room_id, thread_id):
    folder = export_folder(tmp_path)
    markdown, data = write_export(ThreadExport(room_id, thread_id, "2026-11-29T10:00:00Z", ()), folder)

    for path in (markdown, data):
        assert path.resolve().parent.parent == folder.resolve()
        assert not any(part.startswith(".") for part in path.relative_to(folder).parts)
