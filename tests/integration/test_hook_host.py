"""The hook host end to end on a real Synapse: model-call hooks on a tool-calling turn."""

from __future__ import annotations

import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
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
