"""Two agents whose answers mention each other: the chain stops after two bot hops."""

from __future__ import annotations

import json
from typing import Any

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
    e2e.model_server.when(lambda request: "are you still there" in json.dumps(request), Text("still here"))
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    alpha_id, beta_id = e2e.user_id(alpha), e2e.user_id(beta)

    await human.send(room_id, f"@{alpha} start a conversation")
    await human.wait_for(lambda event: event.get("sender") == beta_id and event["type"] == "m.room.message")
    # Alpha answering a later question shows it has read Beta's answer by then (a bot reads a room in order).
    await human.send(room_id, f"@{alpha} are you still there?")
    await human.wait_for(lambda event: event.get("sender") == alpha_id and "still here" in _body(event))
    await e2e.settle(human, room_id)

    chain = {alpha_id: [], beta_id: []}
    for event in human.events:
        if event.get("sender") in chain and event["type"] == "m.room.message" and "still here" not in _body(event):
            chain[event["sender"]].append(event["content"])
    assert [content[HOPS_KEY] for content in chain[alpha_id]] == [1]
    assert [content[HOPS_KEY] for content in chain[beta_id]] == [2]


def _body(event: dict[str, Any]) -> str:
    return str(event.get("content", {}).get("body", ""))
