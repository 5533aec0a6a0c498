"""Element's "is typing…" for an agent: shown while a slow model works, gone once the answer is there."""

from __future__ import annotations

import asyncio

import pytest

from mindroom.testing.model_server import Delay, Text
from tests.integration.conftest import E2E
from tests.integration.support import PATIENCE_S, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_a_slow_answer_is_announced_by_a_typing_notice_that_is_cleared(e2e: E2E) -> None:
    human = await e2e.human()
    agent, room = e2e.name("typist"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Typist", "model": "default", "rooms": [room]}})
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    bot = e2e.user_id(agent)
    e2e.model_server.set_default(Delay(2.0, Text("took a while")))
    question = await human.send(room_id, "think hard")
    await human.wait_for(thread_replies(question, bot))
    deadline = asyncio.get_running_loop().time() + PATIENCE_S
    while asyncio.get_running_loop().time() < deadline:
        shown = [index for index, (rid, users) in enumerate(human.typing) if rid == room_id and bot in users]
        if shown and any(rid == room_id and bot not in users for rid, users in human.typing[shown[0] + 1 :]):
            return
        await asyncio.sleep(0.2)
    pytest.fail(f"no typing notice shown and then cleared for {bot}: {human.typing}")
