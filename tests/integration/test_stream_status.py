"""The stream status of replies on a real Synapse: what each edit says, and what a hook's snapshot read sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY
from mindroom.constants import (
    STREAM_STATUS_APPROVAL_PENDING,
    STREAM_STATUS_CANCELLED,
    STREAM_STATUS_COMPLETED,
    STREAM_STATUS_KEY,
    STREAM_STATUS_STREAMING,
)
from mindroom.testing.model_server import Stream, Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

# On 👀 and 👍 the hook writes what the agent's latest message in the thread says, read as workloop reads it.
SNAPSHOTS = """
import json
from pathlib import Path
from mindroom.constants import STREAM_STATUS_KEY
from mindroom.hooks import hook
from mindroom.matrix.identity import MatrixID

@hook("reaction:received")
async def on_reaction(ctx):
    if ctx.reaction_key not in ("👀", "👍"):
        return
    domain = ctx.config.get_domain(ctx.runtime_paths)
    agent = MatrixID.from_agent(ctx.settings["agent"], domain, ctx.runtime_paths).full_id
    snapshot = await ctx.get_latest_agent_message_snapshot(ctx.room_id, agent, thread_id=ctx.thread_id)
    status = None if snapshot is None else snapshot.content.get(STREAM_STATUS_KEY)
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"key": ctx.reaction_key, "status": status}) + "\\n")
"""


def _statuses(event: dict[str, Any]) -> tuple[Any, Any]:
    """An edit's status where clients applying `m.new_content` read it, and at the edit's top level."""
    content = event["content"]
    return content.get("m.new_content", {}).get(STREAM_STATUS_KEY), content.get(STREAM_STATUS_KEY)


async def _world(e2e: E2E, tmp_path: Path, **extra: Any) -> tuple[HumanClient, str, str, Path]:
    """One streaming agent with the snapshot plugin; (human, agent's user id, room id, the plugin's log)."""
    log = tmp_path / "snapshots.jsonl"
    e2e.plugin("snapshots", SNAPSHOTS)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room], "tools": ["calculator"]}},
        plugins=[{"path": "plugins/snapshots", "settings": {"log": str(log), "agent": agent}}],
        **extra,
    )
    config["defaults"]["enable_streaming"] = True
    await e2e.start(config)
    agent_user = e2e.user_id(agent)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent_user, room_id, log


async def _seen(log: Path, key: str) -> set[Any]:
    """The statuses the hook saw on `key` reactions (each bot of the room may run it), once it ran."""

    def statuses() -> set[Any]:
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return {record["status"] for record in records if record["key"] == key}

    return await eventually(statuses, f"the snapshot hook on {key}")


async def test_stream_status_streamed_reply_edits_stream_then_complete_and_a_hook_reads_completed(
    e2e: E2E, tmp_path: Path
):
    human, agent_user, room_id, log = await _world(e2e, tmp_path)
    e2e.model_server.script(Stream(["Hello", " there", ", friend", "."], delay_s=0.3), model="agent-model")

    question = await human.send(room_id, "greet me slowly")
    first = await human.wait_for(thread_replies(question, agent_user))
    final = await human.wait_for(
        lambda ev: edits_of(first["event_id"])(ev) and _statuses(ev)[0] != STREAM_STATUS_STREAMING
    )

    assert first["content"][STREAM_STATUS_KEY] == STREAM_STATUS_STREAMING
    assert _statuses(final) == (STREAM_STATUS_COMPLETED, STREAM_STATUS_COMPLETED)
    assert final["content"]["m.new_content"]["body"] == "Hello there, friend."
    edits = human.matching(edits_of(first["event_id"]))
    updates = edits[: edits.index(final)]
    assert updates, "no edit while streaming"
    assert all(_statuses(edit) == (STREAM_STATUS_STREAMING, STREAM_STATUS_STREAMING) for edit in updates)
    await human.react(room_id, first["event_id"], "👍")
    assert await _seen(log, "👍") == {STREAM_STATUS_COMPLETED}


async def test_stream_status_a_stopped_reply_reads_streaming_then_ends_cancelled(e2e: E2E, tmp_path: Path):
    human, agent_user, room_id, log = await _world(e2e, tmp_path)
    # The first chunk arrives at once; the next would come only after 30 s.
    e2e.model_server.script(Stream(["The first part", " and a part nobody sees"], delay_s=30), model="agent-model")

    question = await human.send(room_id, "tell me a long story")
    streamed = await human.wait_for(thread_replies(question, agent_user))
    await human.react(room_id, streamed["event_id"], "👀")
    assert await _seen(log, "👀") == {STREAM_STATUS_STREAMING}
    await human.react(room_id, streamed["event_id"], "🛑")
    final = await human.wait_for(
        lambda ev: edits_of(streamed["event_id"])(ev) and _statuses(ev)[0] != STREAM_STATUS_STREAMING
    )

    assert _statuses(final) == (STREAM_STATUS_CANCELLED, STREAM_STATUS_CANCELLED)
    assert final["content"]["m.new_content"]["body"] == "The first part\n\n(stopped)"
    await human.react(room_id, streamed["event_id"], "👍")
    assert await _seen(log, "👍") == {STREAM_STATUS_CANCELLED}


async def test_stream_status_a_card_reads_approval_pending_until_approved_then_the_reply_completes(
    e2e: E2E, tmp_path: Path
):
    rules = {"rules": [{"match": "calculate", "action": "require_approval"}]}
    human, agent_user, room_id, log = await _world(e2e, tmp_path, tool_approval=rules)
    e2e.model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("It is 42."), model="agent-model")

    question = await human.send(room_id, "six times seven?")
    card = await human.wait_for(
        lambda ev: thread_replies(question, agent_user)(ev) and APPROVAL_CONTENT_KEY in ev["content"]
    )
    assert card["content"][STREAM_STATUS_KEY] == STREAM_STATUS_APPROVAL_PENDING
    await human.react(room_id, card["event_id"], "👀")
    assert await _seen(log, "👀") == {STREAM_STATUS_APPROVAL_PENDING}
    await human.react(room_id, card["event_id"], "✅")
    answer = await human.wait_for(
        lambda ev: thread_replies(question, agent_user)(ev) and APPROVAL_CONTENT_KEY not in ev["content"]
    )
    final = await human.wait_for(
        lambda ev: edits_of(answer["event_id"])(ev) and _statuses(ev)[0] != STREAM_STATUS_STREAMING
    )

    assert answer["content"][STREAM_STATUS_KEY] == STREAM_STATUS_STREAMING
    assert _statuses(final) == (STREAM_STATUS_COMPLETED, STREAM_STATUS_COMPLETED)
    assert final["content"]["m.new_content"]["body"] == "It is 42."
    outcome = await human.wait_for(edits_of(card["event_id"]))
    assert _statuses(outcome) == (None, None)  # decided: the card is a notice, no longer a reply waiting
    await human.react(room_id, answer["event_id"], "👍")
    assert await _seen(log, "👍") == {STREAM_STATUS_COMPLETED}
