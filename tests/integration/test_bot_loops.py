"""Two agents whose answers mention each other: the chain stops after two bot hops."""

from __future__ import annotations

import asyncio

import pytest

from mindroom.constants import HOPS_KEY
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_bot_loop_two_agents_mentioning_each_other_stop_after_two_hops(e2e: E2E):
    human = await e2e.human()
    alpha, beta, room = e2e.name("alpha"), e2e.name("beta"), e2e.name("room")
    models = e2e.models()
    base = models["default"]["extra_kwargs"]
    models["alpha-model"] = {"provider": "openai", "id": "alpha-model", "extra_kwargs": base}
    models["beta-model"] = {"provider": "openai", "id": "beta-model", "extra_kwargs": base}
    config = e2e.basic_config(
        [human.user_id],
        {
            alpha: {"display_name": "Alpha", "model": "alpha-model", "rooms": [room]},
            beta: {"display_name": "Beta", "model": "beta-model", "rooms": [room]},
        },
        models=models,
    )
    e2e.model_server.set_default(Text(f"@{beta} over to you"), model="alpha-model")
    e2e.model_server.set_default(Text(f"@{alpha} back to you"), model="beta-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)

    await human.send(room_id, f"@{alpha} start a conversation")
    await asyncio.sleep(8.0)

    by = {e2e.user_id(alpha): [], e2e.user_id(beta): []}
    for event in human.events:
        if event.get("room_id") == room_id and event.get("sender") in by and event["type"] == "m.room.message":
            by[event["sender"]].append(event["content"])
    alpha_said, beta_said = by[e2e.user_id(alpha)], by[e2e.user_id(beta)]
    assert [content[HOPS_KEY] for content in alpha_said] == [1]
    assert [content[HOPS_KEY] for content in beta_said] == [2]
