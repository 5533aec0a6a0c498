"""Faulty plugins never stop an answer; a restart never answers twice."""

from __future__ import annotations

import asyncio

import pytest

from mindroom.testing.model_server import Stream, Text
from tests.integration.conftest import E2E
from tests.integration.support import edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FAULTY = """
import asyncio, sys, time
from mindroom.hooks import hook

@hook("message:received", timeout_ms=300)
async def received_hangs(ctx):
    await asyncio.sleep(3600)

@hook("message:received")
async def received_exits(ctx):
    sys.exit(3)

@hook("message:enrich", timeout_ms=300)
async def enrich_hangs(ctx):
    await asyncio.Event().wait()

@hook("message:enrich")
async def enrich_raises(ctx):
    raise RuntimeError("enrichment broke")

@hook("message:before_response")
async def before_exits(ctx):
    ctx.draft.response_text = "tampered"
    raise SystemExit(1)

@hook("message:before_response")
async def before_interrupts(ctx):
    raise KeyboardInterrupt

@hook("message:after_response")
async def after_raises(ctx):
    raise ValueError("after broke")
"""


async def _world(e2e: E2E, *, streaming: bool = False, plugins: list | None = None):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [room]}},
        plugins=plugins or [],
    )
    config["defaults"]["enable_streaming"] = streaming
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id, config


async def test_faulty_hooks_raise_hang_and_exit_yet_the_answer_arrives(e2e: E2E):
    e2e.plugin("faulty", FAULTY)
    human, agent, room_id, _ = await _world(e2e, plugins=["plugins/faulty"])
    e2e.model_server.script(Text("still here"), model="agent-model")

    event_id = await human.send(room_id, "are you alive?")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=30)
    assert reply["content"]["body"] == "still here"
    running = e2e.daemon.running
    stats = {hook.hook_name: hook.stats for hook in running.live.registry.all_hooks()}
    assert stats["received_hangs"].timeouts >= 1
    assert stats["received_exits"].failures >= 1
    assert stats["before_exits"].failures == 1
    assert stats["enrich_raises"].failures == 1


async def test_restart_answers_nothing_twice(e2e: E2E):
    human, agent, room_id, config = await _world(e2e)
    e2e.model_server.set_default(Text("once"), model="agent-model")
    event_id = await human.send(room_id, "answer me once")
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    calls_before = len(e2e.model_server.requests)

    await e2e.stop()
    await e2e.start(config)
    await asyncio.sleep(2.0)
    assert len(human.matching(thread_replies(event_id))) == 1
    assert len(e2e.model_server.requests) == calls_before

    follow_up = await human.send(room_id, "and now?")
    await human.wait_for(thread_replies(follow_up, e2e.user_id(agent)))


async def test_streaming_answer_is_sent_then_edited_to_the_final_text(e2e: E2E):
    human, agent, room_id, _ = await _world(e2e, streaming=True)
    e2e.model_server.script(Stream(["Hel", "lo ", "stream", "ing"], delay_s=0.2), model="agent-model")

    event_id = await human.send(room_id, "stream please")
    first = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    final = await human.wait_for(
        lambda ev: edits_of(first["event_id"])(ev) and ev["content"]["m.new_content"]["body"] == "Hello streaming"
    )
    assert final["sender"] == e2e.user_id(agent)


async def test_model_failure_becomes_a_short_error_reply(e2e: E2E):
    from mindroom.testing.model_server import HttpError

    human, agent, room_id, _ = await _world(e2e)
    e2e.model_server.set_default(HttpError(500, "boom"), model="agent-model")
    event_id = await human.send(room_id, "break please")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=60)
    assert reply["content"]["body"].startswith("⚠️")
    assert len(reply["content"]["body"]) < 300
