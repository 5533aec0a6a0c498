"""The `thread_summary` tool: a pinned notice in the thread, read back as the thread's summary."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mindroom.constants import RuntimePaths
from mindroom.matrix.thread_summaries import SUMMARY_KEY
from mindroom.testing.recording_client import RecordingHomeserver
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.builtin.thread_summary import get_thread_summary, set_thread_summary
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError
from tests.bots.test_thread_summaries import ROOM, ThreadClient

ALICE = "@alice:localhost"


class Rooms:
    def __init__(self) -> None:
        self.server = RecordingHomeserver()
        self.clients = {"helper": ThreadClient(self.server, "helper")}
        self.root = self.server.message(ROOM, ALICE, "the build is red").event_id
        self.reply = self.server.message(ROOM, ALICE, "still red", thread_root=self.root).event_id

    def client(self, agent: str) -> Any:
        return self.clients.get(agent)

    def user_ids(self) -> Mapping[str, str]:
        return {name: client.user_id for name, client in self.clients.items()}


@pytest.fixture
def rooms(tmp_path: Path) -> Iterator[Rooms]:
    rooms = Rooms()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(rooms=rooms))  # type: ignore[arg-type]
    yield rooms
    withdraw()


def turn(tmp_path: Path, thread: str | None):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    return bind_runtime_context(ToolRuntimeContext(None, "helper", ROOM, thread, ALICE, runtime_paths=paths))


@pytest.mark.asyncio
async def test_set_thread_summary_sends_a_pinned_notice_that_get_reads_back(tmp_path, rooms):
    with turn(tmp_path, None):
        before = json.loads(await get_thread_summary(thread_id=rooms.reply))
        written = json.loads(await set_thread_summary("Build red on CI; waiting on infra.", thread_id=rooms.reply))
        read = json.loads(await get_thread_summary(thread_id=rooms.root))

    notice = rooms.server.events[written["event_id"]].content
    assert before["summary"] is None
    assert notice["msgtype"] == "m.notice" and notice["m.relates_to"]["event_id"] == rooms.root
    assert notice[SUMMARY_KEY]["model"] == "manual" and notice[SUMMARY_KEY]["pinned"] is True
    assert (read["summary"], read["message_count"], read["pinned"]) == ("Build red on CI; waiting on infra.", 2, True)


@pytest.mark.asyncio
async def test_set_thread_summary_refuses_a_summary_longer_than_300_characters(tmp_path, rooms):
    with turn(tmp_path, rooms.root), pytest.raises(ToolError, match="1 to 300"):
        await set_thread_summary("x" * 301)
    assert len(rooms.server.events) == 2
