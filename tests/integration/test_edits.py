"""Editing a question: the agent answers the new text by editing its own answer, and history follows."""

from __future__ import annotations

import asyncio
import json

import pytest
from structlog.testing import capture_logs

from mindroom.testing.model_server import Delay, Echo, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def _answer_to(event_id: str, sender: str):
    def predicate(event: dict) -> bool:
        relates = event.get("content", {}).get("m.relates_to") or {}
        return event.get("sender") == sender and (relates.get("m.in_reply_to") or {}).get("event_id") == event_id

    return predicate


async def _edit(human: HumanClient, room_id: str, event_id: str, new_body: str) -> str:
    content = {
        "msgtype": "m.text",
        "body": f"* {new_body}",
        "m.new_content": {"msgtype": "m.text", "body": new_body},
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
    }
    response = await human.client.room_send(room_id, "m.room.message", content)
    return str(response.event_id)


@pytest.mark.parametrize("streaming", [False, True])
async def test_edits_the_latest_question_edits_the_answer_in_place_and_replaces_history(e2e: E2E, streaming: bool):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    config["defaults"]["enable_streaming"] = streaming
    e2e.model_server.set_default(Echo(prefix="echo: "))
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)

    question = await human.send(room_id, "what is the capital of Frence")
    answer = await human.wait_for(thread_replies(question, agent_user))
    await asyncio.sleep(0.5)
    await _edit(human, room_id, question, "what is the capital of France")
    edited = await human.wait_for(
        lambda ev: edits_of(answer["event_id"])(ev) and "France" in ev["content"]["m.new_content"]["body"]
    )
    follow_up = await human.send(room_id, "and its population?", thread_root=question)
    await human.wait_for(_answer_to(follow_up, agent_user))
    await asyncio.sleep(1.0)

    replies = human.matching(thread_replies(question, agent_user))
    assert len(replies) == 2 and replies[0]["event_id"] == answer["event_id"]  # no second answer to the edit
    assert edited["content"]["m.new_content"]["body"].startswith("echo: what is the capital of France")
    last = e2e.model_server.requests[-1]
    assert last_user_message(last).startswith("and its population?")
    history = json.dumps(last["messages"])
    assert "capital of France" in history and "Frence" not in history


async def test_edits_of_an_older_question_are_ignored_and_logged(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    e2e.model_server.set_default(Echo(prefix="echo: "))
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)
    first = await human.send(room_id, "first question")
    answer = await human.wait_for(thread_replies(first, agent_user))
    second = await human.send(room_id, "second question", thread_root=first)
    await human.wait_for(_answer_to(second, agent_user))
    requests = len(e2e.model_server.requests)

    with capture_logs() as logs:
        await _edit(human, room_id, first, "first question, edited")
        await asyncio.sleep(3.0)

    assert len(e2e.model_server.requests) == requests
    assert human.matching(edits_of(answer["event_id"])) == []
    reasons = [entry.get("reason", "") for entry in logs if entry["event"] == "event dropped at ingress"]
    assert any("edit of an older message" in reason for reason in reasons)


async def test_edits_a_burst_of_fifteen_edits_runs_the_model_at_most_twice_and_answers_the_last(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    e2e.model_server.set_default(Delay(0.5, Echo(prefix="echo: ")), model="agent-model")
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_user = e2e.user_id(agent)
    question = await human.send(room_id, "version 0")
    answer = await human.wait_for(thread_replies(question, agent_user), timeout=30)
    asked = len(e2e.model_server.requests)

    for n in range(1, 16):
        await _edit(human, room_id, question, f"version {n}")
    final = await human.wait_for(
        lambda ev: edits_of(answer["event_id"])(ev) and ev["content"]["m.new_content"]["body"] == "echo: version 15",
        timeout=30,
    )
    await asyncio.sleep(2.0)  # nothing answers an older edit after the last one

    calls = [last_user_message(r) for r in e2e.model_server.requests[asked:] if r.get("model") == "agent-model"]
    assert 1 <= len(calls) <= 2 and calls[-1].startswith("version 15")
    answer_edits = human.matching(edits_of(answer["event_id"]))
    assert answer_edits[-1]["event_id"] == final["event_id"]
    assert len(human.matching(thread_replies(question, agent_user))) == 1
