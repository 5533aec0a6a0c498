"""The hook host end to end on a real Synapse: model-call hooks on a tool-calling turn, background observers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies
from tests.integration.test_builtin_tools import agent_requests, ask, start

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

REWRITER = """
from mindroom.hooks import hook

@hook("model:before_call")
async def second_round_trip(ctx):
    if ctx.round_trip == 2:
        ctx.messages[-1]["content"] = "forty-two, said the plugin"
        ctx.messages.append({"role": "user", "content": "Answer in words."})
"""


async def test_hook_host_model_call_hook_rewrites_the_second_round_trip_of_a_tool_calling_turn(e2e: E2E):
    agent = e2e.name("helper")
    e2e.plugin("rewriter", REWRITER)
    human, room_id = await start(e2e, {agent: {"tools": ["calculator"]}}, plugins=["plugins/rewriter"])
    e2e.model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("Forty-two."), model="agent-model")

    _, reply = await ask(e2e, human, room_id, agent, "what is six times seven?")

    assert reply["content"]["body"] == "Forty-two."
    first, second = agent_requests(e2e)
    assert "what is six times seven?" in first["messages"][-1]["content"]
    assert second["messages"][-2]["role"] == "tool"
    assert second["messages"][-2]["content"] == "forty-two, said the plugin"
    assert second["messages"][-1] == {"role": "user", "content": "Answer in words."}


SLOW_OBSERVER = """
import asyncio
from pathlib import Path
from mindroom.hooks import hook

@hook("message:received", background=True, timeout_ms=20000)
async def slow_audit(ctx):
    if ctx.envelope.agent_name == "router":
        return
    await asyncio.sleep(5)
    Path(ctx.settings["done"]).write_text(ctx.envelope.body)
"""


async def test_hook_host_background_observer_sleeping_5_s_neither_delays_the_answer_nor_is_lost_at_stop(
    e2e: E2E, tmp_path: Path
):
    agent = e2e.name("helper")
    done = tmp_path / "audited"
    e2e.plugin("audit", SLOW_OBSERVER)
    human, room_id = await start(e2e, {agent: {}}, plugins=[{"path": "plugins/audit", "settings": {"done": str(done)}}])
    e2e.model_server.script(Text("Right away."), model="agent-model")

    sent_at = time.monotonic()
    event_id = await human.send(room_id, "quick question", mentions=[e2e.user_id(agent)])
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=4.0)

    assert time.monotonic() - sent_at < 4.0
    assert reply["content"]["body"] == "Right away."
    assert not done.exists()  # the observer is still asleep: the answer did not wait for it
    await e2e.stop()  # the stop drains the queue within its grace
    assert done.read_text() == "quick question"
