"""Reactions on a real Synapse: 🛑 stops a streaming answer at once (even while the model is silent), then hooks run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mindroom.testing.model_server import Stream
from tests.integration.conftest import E2E
from tests.integration.support import edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

REACTIONS = """
import json
from pathlib import Path
from mindroom.hooks import hook

@hook("reaction:received")
async def on_reaction(ctx):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"key": ctx.reaction_key, "target": ctx.target_event_id, "agent": ctx.agent_name}) + "\\n")
"""


def _new_body(event: dict) -> str:
    content = event.get("content", {})
    return str(content.get("m.new_content", {}).get("body", content.get("body", "")))


async def test_reaction_stop_ends_a_silent_stream_promptly_then_reaction_hook_runs(e2e: E2E, tmp_path: Path):
    log = tmp_path / "reactions.jsonl"
    e2e.plugin("reactions", REACTIONS)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room]}},
        plugins=[{"path": "plugins/reactions", "settings": {"log": str(log)}}],
    )
    config["defaults"]["enable_streaming"] = True
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)
    # The first chunk arrives at once; the next would come only after 30 s of silence.
    e2e.model_server.script(
        Stream(["The first part", " and a part nobody should see"], delay_s=30), model="agent-model"
    )

    question = await human.send(room_id, "tell me a long story")
    streamed = await human.wait_for(thread_replies(question, agent_user), timeout=15)
    assert streamed["content"]["body"].startswith("The first part")
    loop = asyncio.get_running_loop()
    reacted_at = loop.time()
    await human.react(room_id, streamed["event_id"], "🛑")

    final = await human.wait_for(
        lambda ev: edits_of(streamed["event_id"])(ev) and _new_body(ev).endswith("(stopped)"), timeout=10
    )
    assert loop.time() - reacted_at < 5.0
    assert _new_body(final) == "The first part\n\n(stopped)"
    for _ in range(50):
        if log.exists() and log.read_text().strip():
            break
        await asyncio.sleep(0.1)
    record = json.loads(log.read_text().splitlines()[0])
    assert record == {"key": "🛑", "target": streamed["event_id"], "agent": agent}
    daemon = e2e.daemon
    assert daemon is not None and daemon.running is not None
    bot = daemon.bots[agent]
    for _ in range(50):  # the turn is over: nothing of it keeps running after the stop
        if bot.in_flight == 0:
            break
        await asyncio.sleep(0.1)
    assert bot.in_flight == 0
