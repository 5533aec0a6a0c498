"""`tool_approval:` rules on the real homeserver: a matching call waits on a card until its requester's ✅."""

from __future__ import annotations

import time

import pytest

from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY
from mindroom.testing.model_server import Text, ToolCall, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import edits_of, thread_replies
from tests.integration.test_tools import last_tool_message

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


PROBE = "are you there?"


def agent_requests(e2e: E2E) -> list[dict]:
    return [request for request in e2e.model_server.requests if request.get("model") == "agent-model"]


async def test_tool_approval_rule_holds_a_call_until_the_requester_approves(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["reasoning"]}}
    approval = {
        "rules": [{"match": "analyze", "action": "auto_approve"}, {"match": "th*", "action": "require_approval"}]
    }
    await e2e.start(e2e.basic_config([alice.user_id, bob.user_id], agents, tool_approval=approval))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.script(
        ToolCall("think", {"title": "Plan", "thought": "api_key=sk-abcdefghijklmnop"}), Text("Done thinking."),
        model="agent-model",
    )  # fmt: skip

    e2e.model_server.when(lambda r: PROBE in last_user_message(r), Text("Here."))

    def asked_in_thread() -> list[dict]:
        return [r for r in agent_requests(e2e) if PROBE not in last_user_message(r)]

    root = await alice.send(room_id, "think it over")
    card = await alice.wait_for(lambda e: thread_replies(root, agent_id)(e) and APPROVAL_CONTENT_KEY in e["content"])

    body = card["content"]["body"]
    assert body.startswith("🔐 Helper wants to run think: the approval rule 'th*' asks first. Arguments: {")
    assert "sk-abcdefghijklmnop" not in body and "Plan" in body
    await bob.react(room_id, card["event_id"], "✅")  # not the requester: no answer
    # Bob's next message reaches the agent after his reaction (the homeserver keeps their order), and its answer
    # takes a model call and a send: had the reaction allowed the call, the tool would have run and the model
    # been asked again by the time that answer is seen.
    probe = await bob.send(room_id, PROBE)
    await bob.wait_for(lambda e: thread_replies(probe, agent_id)(e) and e["content"].get("body") == "Here.")
    assert len(asked_in_thread()) == 1  # held: the tool has not run, the model has not been asked again
    assert not alice.matching(edits_of(card["event_id"]))
    assert not alice.matching(lambda e: thread_replies(root, agent_id)(e) and APPROVAL_CONTENT_KEY not in e["content"])

    await alice.react(room_id, card["event_id"], "✅")
    answer = await alice.wait_for(
        lambda e: thread_replies(root, agent_id)(e) and e["content"].get("body") == "Done thinking."
    )

    assert answer["content"]["body"] == "Done thinking."
    assert "Title: Plan" in last_tool_message(asked_in_thread()[1])
    outcome = await alice.wait_for(edits_of(card["event_id"]))
    assert outcome["content"]["m.new_content"]["body"].endswith(f"— ✅ approved by {alice.user_id}.")


async def test_tool_approval_rule_lets_unmatched_and_auto_approved_calls_run(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["reasoning"]}}
    approval = {"default": "require_approval", "rules": [{"match": "analyze", "action": "auto_approve"}]}
    await e2e.start(e2e.basic_config([alice.user_id], agents, tool_approval=approval))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    call = {"title": "t", "result": "r", "analysis": "a"}
    e2e.model_server.script(ToolCall("analyze", call), Text("Analyzed."), model="agent-model")

    root = await alice.send(room_id, "analyze it")
    await alice.wait_for(
        lambda e: thread_replies(root, e2e.user_id(agent))(e) and e["content"].get("body") == "Analyzed."
    )

    assert "Title: t" in last_tool_message(agent_requests(e2e)[1])
    assert not [
        e for e in alice.matching(thread_replies(root, e2e.user_id(agent))) if APPROVAL_CONTENT_KEY in e["content"]
    ]


async def test_tool_approval_rule_a_timed_approval_lets_the_next_call_through_until_it_expires(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["reasoning"]}}
    approval = {"rules": [{"match": "think", "action": "require_approval"}]}
    orchestrator = await e2e.start(e2e.basic_config([alice.user_id], agents, tool_approval=approval))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.script(
        ToolCall("think", {"title": "One", "thought": "first"}), Text("First thought."),
        ToolCall("think", {"title": "Two", "thought": "other arguments"}), Text("Second thought."),
        ToolCall("think", {"title": "Three", "thought": "after the grant"}), Text("Third thought."),
        model="agent-model",
    )  # fmt: skip

    def cards(root: str) -> list[dict]:
        return [e for e in alice.matching(thread_replies(root, agent_id)) if APPROVAL_CONTENT_KEY in e["content"]]

    def answered(root: str, text: str):
        return lambda e: thread_replies(root, agent_id)(e) and e["content"].get("body") == text

    root = await alice.send(room_id, "think it over")
    card = await alice.wait_for(lambda e: thread_replies(root, agent_id)(e) and APPROVAL_CONTENT_KEY in e["content"])
    assert card["content"][APPROVAL_CONTENT_KEY]["auto_approve_options"] == [300, 600, 1800]
    await alice.react(room_id, card["event_id"], "🔟")
    await alice.wait_for(answered(root, "First thought."))
    outcome = await alice.wait_for(edits_of(card["event_id"]))
    assert outcome["content"]["m.new_content"][APPROVAL_CONTENT_KEY]["auto_approval"]["revoked_at"] is None

    await alice.send(room_id, "and think again", thread_root=root)
    await alice.wait_for(answered(root, "Second thought."))
    assert len(cards(root)) == 1  # the grant let the call through without a card
    assert "Title: Two" in last_tool_message(agent_requests(e2e)[3])

    desk = orchestrator.running.stores.approvals
    desk.timed.clock = lambda: time.time() + 601  # ten minutes and a second later
    await alice.send(room_id, "once more", thread_root=root)
    again = await alice.wait_for(
        lambda e: (
            thread_replies(root, agent_id)(e)
            and APPROVAL_CONTENT_KEY in e["content"]
            and e["event_id"] != card["event_id"]
        )
    )
    assert again["content"]["body"].startswith("🔐 Helper wants to run think")  # the grant expired: asked anew
    assert len(agent_requests(e2e)) == 5  # held at the new card: the tool has not run
