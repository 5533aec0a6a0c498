"""One generation per turn: a reload while a turn waits for its slot does not reach into that turn."""

from __future__ import annotations

import json

import pytest

from mindroom.testing.model_server import Delay, Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

GENERATION = """
from mindroom.hooks import EnrichmentItem, hook

@hook("message:enrich")
async def mark(ctx):
    return [EnrichmentItem(key="generation", text="GEN-VERSION")]

@hook("message:before_response")
async def stamp(ctx):
    ctx.draft.response_text += " [VERSION]"
"""


def _plugin(version: str) -> str:
    return GENERATION.replace("VERSION", version)


def _system_text(request: dict) -> str:
    return json.dumps([m for m in request["messages"] if m.get("role") == "system"])


async def test_live_state_turn_waiting_for_its_slot_runs_on_one_generation_through_a_reload(e2e: E2E):
    plugin_dir = e2e.plugin("generation", _plugin("v1"))
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "instructions": ["INSTR-one"], "rooms": [room]}},
        plugins=["plugins/generation"],
    )
    config["defaults"]["max_concurrent_turns_per_agent"] = 1
    daemon = await e2e.start(config, watch=False)
    assert daemon.reloader is not None
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)
    # Holds the agent's only slot until well after the reload below, even on a loaded machine.
    e2e.model_server.when(lambda r: "hold the slot" in last_user_message(r), Delay(10.0, Text("slow answer")))
    e2e.model_server.set_default(Text("quick answer"))
    seen = len(e2e.model_server.requests)

    first = await human.send(room_id, "hold the slot")
    await e2e.model_server.wait_for_requests_async(seen + 1)
    second = await human.send(room_id, "wait for the slot")  # a new thread: it waits for the agent's only slot
    bot = daemon.bots[agent]
    await eventually(lambda: bot.waiting_turns >= 1, "the second turn waiting for the slot")

    (plugin_dir / "hooks.py").write_text(_plugin("v2"))
    config["agents"][agent]["instructions"] = ["INSTR-two"]
    e2e.write_config(config)
    outcome = await daemon.reloader.request("test")
    assert outcome.ok, outcome.error
    assert bot.waiting_turns == 1  # the swap happened while the second turn still waited

    first_reply = await human.wait_for(thread_replies(first, agent_user))
    second_reply = await human.wait_for(thread_replies(second, agent_user))
    third = await human.send(room_id, "after the reload")
    third_reply = await human.wait_for(thread_replies(third, e2e.user_id(agent)))

    requests = e2e.model_server.requests[seen:]
    by_text = {last_user_message(r).split("\n", 1)[0]: r for r in requests}
    waited = by_text["wait for the slot"]
    assert "INSTR-one" in _system_text(waited) and "INSTR-two" not in _system_text(waited)
    assert "GEN-v1" in last_user_message(waited)
    assert second_reply["content"]["body"] == "quick answer [v1]"
    assert first_reply["content"]["body"] == "slow answer [v1]"
    later = by_text["after the reload"]
    assert "INSTR-two" in _system_text(later) and "GEN-v2" in last_user_message(later)
    assert third_reply["content"]["body"] == "quick answer [v2]"
