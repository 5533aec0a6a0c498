"""Conversation history end to end: per-thread sessions, enrichment kept out of history, restarts, several agents."""

from __future__ import annotations

import json

import pytest

from mindroom.ai import load_history, session_db_path
from mindroom.hooks.enrichment import ENRICHMENT_TAG
from mindroom.testing.model_server import Delay, Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

WEATHER = """
from mindroom.hooks import EnrichmentItem, hook

@hook("message:enrich")
async def weather(ctx):
    return EnrichmentItem(key="weather", text="Sunny and 21C")
"""


def agent_requests(e2e: E2E) -> list[dict]:
    return [request for request in e2e.model_server.requests if request.get("model") == "agent-model"]


def user_and_assistant(request: dict) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in request["messages"] if m["role"] in ("user", "assistant")]


async def one_agent(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "model": "default", "rooms": [room]}})
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id, config


async def test_sessions_enrichment_reaches_the_current_turn_only(e2e: E2E):
    e2e.plugin("weather", WEATHER)
    human, agent, room_id, _ = await one_agent(e2e)
    e2e.model_server.script(Text("First answer."), Text("Second answer."), model="agent-model")

    root = await human.send(room_id, "first question")
    await human.wait_for(thread_replies(root, e2e.user_id(agent)))
    await human.send(room_id, "second question", thread_root=root)
    await human.wait_for(
        lambda ev: thread_replies(root, e2e.user_id(agent))(ev) and ev["content"]["body"] == "Second answer."
    )

    first, second = agent_requests(e2e)
    assert "first question" in last_user_message(first) and "Sunny and 21C" in last_user_message(first)
    assert "second question" in last_user_message(second) and "Sunny and 21C" in last_user_message(second)
    assert user_and_assistant(second)[:2] == [("user", "first question"), ("assistant", "First answer.")]
    history = await load_history(agent, f"{room_id}:{root}", storage_root=e2e.storage)
    assert history == [
        ("user", "first question"),
        ("assistant", "First answer."),
        ("user", "second question"),
        ("assistant", "Second answer."),
    ]
    db_path = session_db_path(e2e.storage, agent)
    stored = b"".join(path.read_bytes() for path in db_path.parent.glob(db_path.name + "*"))
    assert b"second question" in stored
    assert b"Sunny and 21C" not in stored and ENRICHMENT_TAG.encode() not in stored


async def test_sessions_history_survives_a_daemon_restart(e2e: E2E):
    human, agent, room_id, config = await one_agent(e2e)
    e2e.model_server.script(Text("Noted: the code is 7."), Text("The code was 7."), model="agent-model")
    root = await human.send(room_id, "remember the code 7")
    await human.wait_for(thread_replies(root, e2e.user_id(agent)))

    await e2e.stop()
    await e2e.start(config)
    await human.send(room_id, "what was the code?", thread_root=root)
    await human.wait_for(
        lambda ev: thread_replies(root, e2e.user_id(agent))(ev) and ev["content"]["body"] == "The code was 7."
    )

    after_restart = agent_requests(e2e)[-1]
    assert user_and_assistant(after_restart) == [
        ("user", "remember the code 7"),
        ("assistant", "Noted: the code is 7."),
        ("user", "what was the code?"),
    ]


async def test_sessions_threads_keep_separate_histories(e2e: E2E):
    human, agent, room_id, _ = await one_agent(e2e)
    e2e.model_server.set_default(Text("ok"), model="agent-model")

    first = await human.send(room_id, "thread one")
    await human.wait_for(thread_replies(first, e2e.user_id(agent)))
    second = await human.send(room_id, "thread two")
    await human.wait_for(thread_replies(second, e2e.user_id(agent)))

    assert user_and_assistant(agent_requests(e2e)[-1]) == [("user", "thread two")]


async def test_sessions_several_mentioned_agents_answer_in_mention_order(e2e: E2E):
    human = await e2e.human()
    alpha, beta, room = e2e.name("alpha"), e2e.name("beta"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {
            alpha: {"display_name": "Alpha", "role": "Role-alpha.", "model": "default", "rooms": [room]},
            beta: {"display_name": "Beta", "role": "Role-beta.", "model": "default", "rooms": [room]},
        },
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    # Beta is mentioned first but is slow; Alpha must still wait for it.
    e2e.model_server.when(lambda r: "Role-beta." in json.dumps(r["messages"]), Delay(1.0, Text("beta answers")))
    e2e.model_server.when(lambda r: "Role-alpha." in json.dumps(r["messages"]), Text("alpha answers"))

    alpha_id, beta_id = e2e.user_id(alpha), e2e.user_id(beta)
    root = await human.send(room_id, f"{beta_id} and {alpha_id}: introduce yourselves", mentions=[alpha_id, beta_id])
    await human.wait_for(thread_replies(root, alpha_id))
    await human.wait_for(thread_replies(root, beta_id))

    replies = human.matching(thread_replies(root))
    assert [(reply["sender"], reply["content"]["body"]) for reply in replies] == [
        (beta_id, "beta answers"),
        (alpha_id, "alpha answers"),
    ]
    order = ["beta" if "Role-beta." in json.dumps(r["messages"]) else "alpha" for r in agent_requests(e2e)]
    assert order == ["beta", "alpha"]
