"""The daemon end to end on a real Synapse: routing, authorization, the six pipeline events, isolation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindroom.testing.model_server import Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

RECORDER = """
import json
from pathlib import Path
from mindroom.hooks import hook, EnrichmentItem

def _log(ctx, **fields):
    path = Path(ctx.settings["log"])
    with path.open("a") as fh:
        fh.write(json.dumps({"event": ctx.event_name, "plugin": ctx.plugin_name, **fields}) + "\\n")

@hook("message:received")
async def on_received(ctx):
    _log(ctx, agent=ctx.envelope.agent_name, body=ctx.envelope.body, requester=ctx.envelope.requester_id,
         thread=ctx.envelope.resolved_thread_id)
    if "hush-received" in ctx.envelope.body:
        ctx.suppress = True

@hook("message:enrich")
async def on_enrich(ctx):
    _log(ctx, agent=ctx.envelope.agent_name)
    return EnrichmentItem(key="weather", text="Sunny and 21C")

@hook("message:before_response")
async def on_before(ctx):
    _log(ctx, agent=ctx.envelope.agent_name, text=ctx.draft.response_text)
    if "hush-response" in ctx.envelope.body:
        ctx.draft.suppress = True
    ctx.draft.response_text = ctx.draft.response_text + " [checked]"

@hook("message:after_response")
async def on_after(ctx):
    _log(ctx, agent=ctx.envelope.agent_name, text=ctx.result.response_text, delivery=ctx.result.delivery_kind,
         response_event_id=ctx.result.response_event_id)

@hook("agent:started")
async def on_started(ctx):
    _log(ctx, entity=ctx.entity_name)

@hook("bot:ready")
async def on_ready(ctx):
    _log(ctx, entity=ctx.entity_name, rooms=list(ctx.rooms))
"""


def _read(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def _one_agent_world(e2e: E2E, *, plugins: list | None = None, streaming: bool = False):
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
    return human, agent, room_id


async def test_pipeline_authorized_message_gets_one_threaded_answer_with_every_event_in_order(e2e: E2E, tmp_path):
    log = tmp_path / "events.jsonl"
    e2e.plugin("recorder", RECORDER)
    human, agent, room_id = await _one_agent_world(
        e2e, plugins=[{"path": "plugins/recorder", "settings": {"log": str(log)}}]
    )
    e2e.model_server.script(Text("Hello from the model"), model="agent-model")

    event_id = await human.send(room_id, "what is the weather?")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))

    assert reply["content"]["body"] == "Hello from the model [checked]"
    assert reply["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == event_id

    def both_received_and_answer_sent() -> bool:
        events = _read(log)
        return sum(e["event"] == "message:received" for e in events) == 2 and any(
            e["event"] == "message:after_response" for e in events
        )

    await eventually(both_received_and_answer_sent, "the router's message:received and the agent's after_response")
    await e2e.settle(human, room_id)
    assert len(human.matching(thread_replies(event_id))) == 1

    request = e2e.model_server.requests[-1]
    assert "what is the weather?" in last_user_message(request)
    assert "Sunny and 21C" in last_user_message(request)

    events = _read(log)
    lifecycle = [(e["event"], e["entity"]) for e in events if e["event"] in ("agent:started", "bot:ready")]
    assert ("agent:started", agent) in lifecycle and ("bot:ready", agent) in lifecycle
    assert ("agent:started", "router") in lifecycle
    turn = [e for e in events if e["event"].startswith("message:") and e.get("agent") == agent]
    assert [e["event"] for e in turn] == [
        "message:received",
        "message:enrich",
        "message:before_response",
        "message:after_response",
    ]
    received_entities = sorted(e["agent"] for e in events if e["event"] == "message:received")
    assert received_entities == sorted([agent, "router"])
    assert turn[0]["requester"] == human.user_id and turn[0]["thread"] == event_id
    assert turn[2]["text"] == "Hello from the model"
    assert turn[3]["delivery"] == "sent" and turn[3]["response_event_id"] == reply["event_id"]


async def test_pipeline_unauthorized_user_gets_no_answer(e2e: E2E):
    human, agent, room_id = await _one_agent_world(e2e)
    stranger = await e2e.human("mallory")
    await human.client.room_invite(room_id, stranger.user_id)
    await e2e.joined(stranger, room_id)

    event_id = await stranger.send(room_id, "please answer me")
    control = await human.send(room_id, "and me?")
    await human.wait_for(thread_replies(control, e2e.user_id(agent)))
    await e2e.settle(human, room_id)
    assert human.matching(thread_replies(event_id)) == []
    assert all("please answer me" not in last_user_message(r) for r in e2e.model_server.requests)


async def test_pipeline_suppress_in_received_and_before_response(e2e: E2E, tmp_path):
    log = tmp_path / "events.jsonl"
    e2e.plugin("recorder", RECORDER)
    human, agent, room_id = await _one_agent_world(
        e2e, plugins=[{"path": "plugins/recorder", "settings": {"log": str(log)}}]
    )

    hushed_early = await human.send(room_id, "hush-received please")
    hushed_late = await human.send(room_id, "hush-response please")
    control = await human.send(room_id, "normal question")
    await human.wait_for(thread_replies(control, e2e.user_id(agent)))
    await e2e.settle(human, room_id)

    assert human.matching(thread_replies(hushed_early)) == []
    assert human.matching(thread_replies(hushed_late)) == []
    bodies = [last_user_message(r) for r in e2e.model_server.requests]
    assert not any("hush-received" in b for b in bodies)
    assert any("hush-response" in b for b in bodies)


async def test_pipeline_mention_routes_to_that_agent(e2e: E2E):
    human = await e2e.human()
    first, second, room = e2e.name("alpha"), e2e.name("beta"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {
            first: {"display_name": "Alpha", "role": "First.", "model": "default", "rooms": [room]},
            second: {"display_name": "Beta", "role": "Second.", "model": "default", "rooms": [room]},
        },
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    e2e.model_server.set_default(Text("beta here"), model="agent-model")

    second_id = e2e.user_id(second)
    event_id = await human.send(room_id, f"{second_id} can you help?", mentions=[second_id])
    reply = await human.wait_for(thread_replies(event_id))
    assert reply["sender"] == second_id
    await e2e.settle(human, room_id)
    assert len(human.matching(thread_replies(event_id))) == 1
    assert not any(r.get("model") == "router-model" for r in e2e.model_server.requests)


async def test_pipeline_router_picks_exactly_one_agent(e2e: E2E):
    human = await e2e.human()
    first, second, room = e2e.name("alpha"), e2e.name("beta"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {
            first: {"display_name": "Alpha", "role": "Cooks.", "model": "default", "rooms": [room]},
            second: {"display_name": "Beta", "role": "Does maths.", "model": "default", "rooms": [room]},
        },
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    e2e.model_server.set_default(Text(second), model="router-model")

    event_id = await human.send(room_id, "what is 2+2?")
    reply = await human.wait_for(thread_replies(event_id))
    assert reply["sender"] == e2e.user_id(second)
    await e2e.settle(human, room_id)
    assert len(human.matching(thread_replies(event_id))) == 1
    router_requests = [r for r in e2e.model_server.requests if r.get("model") == "router-model"]
    assert len(router_requests) == 1
    assert "Does maths." in json.dumps(router_requests[0])
