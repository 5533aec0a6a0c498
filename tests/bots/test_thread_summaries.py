"""Thread summaries: which model writes them, when one is due, how a notice is read back, and that a daemon
without a summary model does nothing per answer."""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mindroom.ai.thread_summary import SUMMARY_MAX_CHARS, plain_summary
from mindroom.bots.thread_summaries import SummaryRun, ThreadSummaries, summary_model
from mindroom.config.main import Config
from mindroom.matrix.thread_reader import thread_messages
from mindroom.matrix.thread_summaries import SUMMARY_KEY, latest_summary, send_summary
from mindroom.matrix.thread_tags import RESOLVED_TAG, THREAD_TAGS_EVENT_TYPE, state_key
from mindroom.matrix.transport import JsonReply
from mindroom.tasks import TaskOwner
from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver
from mindroom.tool_system.workspace_layout import workspace_dir

ROOM, ALICE = "!room:localhost", "@alice:localhost"


class ThreadClient(RecordingClient):
    """A recording client that answers the thread relations endpoint from the events of the test."""

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        if "/relations/" not in path:
            return await super().api(method, path, body)
        root = path.split("/relations/")[1].split("/")[0].replace("%24", "$")
        chunk = [
            {"event_id": e.event_id, "sender": e.sender, "type": e.type, "content": e.content,
             "origin_server_ts": e.origin_server_ts}
            for e in self.server.events.values()
            if e.thread_root == root
        ]  # fmt: skip
        return JsonReply(200, {"chunk": chunk})


@dataclass(frozen=True)
class Answering:
    """The agent that answered, as the pipeline hands it over (its name and account)."""

    name: str
    client: Any


def config(**extra: Any) -> Config:
    models = {name: {"provider": "openai", "id": name} for name in ("default", "summary", "other", "by-agent")}
    return Config.model_validate({"models": models, **extra})


def thread(server: RecordingHomeserver, replies: int) -> str:
    root = server.message(ROOM, ALICE, "the build is red").event_id
    for number in range(replies):
        server.message(ROOM, ALICE, f"reply {number}", thread_root=root)
    return root


def test_summary_model_is_the_rooms_then_the_agents_then_the_default():
    per_room = {"work": "summary", "!other:localhost": "other", "helper": "by-agent"}
    both = config(room_thread_summary_models=per_room, defaults={"thread_summary_model": "default"})

    assert summary_model(both, ROOM, {"work"}, "helper") == "summary"
    assert summary_model(both, "!other:localhost", set(), "helper") == "other"
    assert summary_model(both, ROOM, {"work-2"}, "helper") == "by-agent"  # a room key with a suffix is another room
    assert summary_model(both, ROOM, {"work-2"}, "writer") == "default"
    assert summary_model(config(), ROOM, {"work"}, "helper") is None


def test_summary_model_that_is_no_model_is_a_config_error_naming_its_key():
    with pytest.raises(ValidationError) as room:
        config(room_thread_summary_models={"work": "sumary"})  # a near miss of `summary`
    with pytest.raises(ValidationError) as default:
        config(defaults={"thread_summary_model": "summary-2"})

    assert "room_thread_summary_models.work: unknown model 'sumary'" in str(room.value)
    assert "defaults.thread_summary_model: unknown model 'summary-2'" in str(default.value)


@pytest.mark.asyncio
async def test_answered_without_a_summary_model_does_nothing_at_all():
    asked: list[str] = []
    summaries = ThreadSummaries()
    tasks = TaskOwner("test")
    summaries.attach(SummaryRun(lambda room: asked.append(room) or set(), frozenset, {}, tasks, Path("/nowhere")))
    client = ThreadClient(RecordingHomeserver(), "helper")

    summaries.answered(config(), Answering("helper", client), ROOM, "$root")

    assert len(tasks) == 0 and asked == []  # not even the room's keys are looked up


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("replies", "last_count", "pinned", "resolved", "due"),
    [
        (2, None, False, False, True),  # 3 messages: the first threshold
        (1, None, False, False, False),  # 2: one short
        (6, 3, False, False, False),  # 7 < 3 + 5
        (7, 3, False, False, True),  # 8 = 3 + 5
        (7, 3, True, False, False),  # pinned by hand
        (2, None, False, True, False),  # resolved
    ],
)
async def test_is_due_counts_messages_without_notices_or_commands(replies, last_count, pinned, resolved, due):
    server = RecordingHomeserver()
    client = ThreadClient(server, "helper")
    root = thread(server, replies)
    if last_count is not None:
        await send_summary(client, ROOM, root, "earlier", last_count, "summary", pinned=pinned)
    if resolved:
        content = {"set_by": ALICE, "set_at": "2026-11-29T10:00:00Z", "data": {}}
        server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, state_key(root, RESOLVED_TAG))] = content
    summaries = ThreadSummaries()
    summaries.attach(SummaryRun(lambda room: set(), lambda: {client.user_id}, {}, TaskOwner("test"), Path("/nowhere")))
    cfg = config(defaults={"thread_summary_first_threshold": 3, "thread_summary_subsequent_interval": 5})
    server.message(ROOM, ALICE, "!summary", thread_root=root)  # a chat command is not counted

    assert await summaries.is_due(cfg, client, ROOM, root, await thread_messages(client, ROOM, root)) is due


@pytest.mark.asyncio
async def test_latest_summary_counts_only_the_daemons_own_notices():
    server = RecordingHomeserver()
    client, stranger = ThreadClient(server, "helper"), ThreadClient(server, "mallory")
    root = thread(server, 1)
    ours = await send_summary(client, ROOM, root, "ours", 2, "summary")
    await send_summary(stranger, ROOM, root, "forged", 99, "summary", pinned=True)  # same shape, another sender

    events = await thread_messages(client, ROOM, root)
    found = latest_summary(events, {client.user_id})

    assert found is not None and (found.text, found.message_count, found.event_id) == ("ours", 2, ours.event_id)
    assert events[-1].content[SUMMARY_KEY]["summary"] == "forged"
    notice = server.events[ours.event_id].content
    assert notice["msgtype"] == "m.notice" and notice["body"] == "ours"
    assert notice["m.relates_to"]["rel_type"] == "m.thread" and notice["m.relates_to"]["event_id"] == root
    assert set(notice[SUMMARY_KEY]) == {"version", "summary", "message_count", "generated_at", "model"}


@pytest.mark.parametrize(
    ("text", "plain"),
    [("**Fixed** the `build`.", "Fixed the build."), ("# Title\n\n> quoted", "Title quoted"), ("a " * 200, None)],
)
def test_plain_summary_is_one_plain_line_of_at_most_300_characters(text, plain):
    result = plain_summary(text)

    assert len(result) <= SUMMARY_MAX_CHARS and "\n" not in result
    if plain is not None:
        assert result == plain
    else:
        assert result.endswith("...")


@pytest.mark.asyncio
async def test_answered_by_an_agent_keeping_thread_exports_writes_the_thread_into_its_workspace(tmp_path):
    server = RecordingHomeserver()
    client = ThreadClient(server, "helper")
    root = thread(server, 1)
    tasks = TaskOwner("test")
    summaries = ThreadSummaries()
    summaries.attach(SummaryRun(lambda room: set(), lambda: {client.user_id}, {}, tasks, tmp_path))
    agents = {
        "helper": {"display_name": "Helper", "thread_exports": True},
        "writer": {"display_name": "Writer", "thread_exports": False},
    }

    summaries.answered(config(agents=agents), Answering("writer", client), ROOM, root)
    assert len(tasks) == 0
    summaries.answered(config(agents=agents), Answering("helper", client), ROOM, root)
    await tasks.settled()

    [written] = (workspace_dir(tmp_path, "helper") / "thread_exports").glob("*/*.json")
    assert [m["text"] for m in json.loads(written.read_text())["messages"]] == ["the build is red", "reply 0"]
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


class CountingClient(ThreadClient):
    reads = 0

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        if "/relations/" in path:
            type(self).reads += 1
        return await super().api(method, path, body)


@pytest.mark.asyncio
async def test_answered_reads_a_thread_again_only_once_it_may_have_reached_its_threshold():
    server = RecordingHomeserver()
    client = CountingClient(server, "helper")
    root = thread(server, 1)  # 2 messages, 4 short of the threshold of 6
    tasks = TaskOwner("test")
    summaries = ThreadSummaries()
    summaries.attach(SummaryRun(lambda room: set(), lambda: {client.user_id}, {}, tasks, Path("/nowhere")))
    cfg = config(defaults={"thread_summary_model": "summary", "thread_summary_first_threshold": 6})
    reads = []
    for number in range(5):
        summaries.answered(cfg, Answering("helper", client), ROOM, root, opened=number == 0)
        await tasks.settled()
        reads.append(CountingClient.reads)

    # The first answer opened the thread (question and answer: 2 messages, not read); each answer adds at least
    # one message, so the next three cannot reach 6 either.
    assert reads == [0, 0, 0, 0, 1]
