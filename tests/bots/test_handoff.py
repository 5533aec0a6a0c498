"""Hand-offs on the bench: an agent asks another of its room within its turn; the other answers in the thread
as itself and the first goes on with that answer. Circles, strangers and long bot chains are refused with a
message the model reads."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.constants import HOPS_KEY
from mindroom.hooks import EVENT_MESSAGE_AFTER_RESPONSE, EVENT_MESSAGE_RECEIVED, hook
from mindroom.testing.model_server import ScriptedModelServer, Text, ToolCall
from tests.bots.bench import ALICE, LOBBY, registry_of

pytestmark = pytest.mark.asyncio


def world(server: ScriptedModelServer, **agents: dict[str, Any]) -> dict[str, Any]:
    """Agents with a model each (`m-<name>`): the scripted server answers each by name."""
    models = {
        f"m-{name}": {"provider": "openai", "id": f"m-{name}", "extra_kwargs": {"base_url": server.base_url}}
        for name in agents
    }
    return {
        "agents": {
            name: {"display_name": name.title(), "model": f"m-{name}", "rooms": ["lobby"], **fields}
            for name, fields in agents.items()
        },
        "models": models,
    }


def ask(bench: Any, agent: str, text: str, sender: str = ALICE, **content: Any) -> Any:
    mentions = {"m.mentions": {"user_ids": [bench.user_id(agent)]}, **content}
    return bench.server.message(LOBBY, sender, f"@{agent} {text}", extra_content=mentions)


def tool_result(server: ScriptedModelServer, model: str) -> str:
    """What the model read back from its last tool call."""
    asked = [request for request in server.requests if request["model"] == model]
    return str(asked[-1]["messages"][-1]["content"])


async def test_handoff_answer_appears_in_the_thread_and_the_asker_continues_with_it(make_bench, model_server):
    answered: list[str] = []

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def after(ctx: Any) -> None:
        answered.append(ctx.envelope.agent_name)

    model_server.script(
        ToolCall("delegate_task", {"agent_name": "expert", "task": "what is the answer?"}),
        Text("The expert says 42."),
        model="m-helper",
    )
    model_server.script(Text("It is 42."), model="m-expert")
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={})
    bench = await make_bench(agents.pop("agents"), registry=registry_of(after), **agents)
    question = ask(bench, "helper", "hard question")

    await bench.deliver(question)
    await bench.settle()

    handed, final = bench.client("helper").messages
    [expert] = bench.client("expert").messages
    assert handed.body == "➡️ Expert: what is the answer?"
    assert expert.body == "It is 42." and final.body == "The expert says 42."
    assert handed.thread_root == expert.thread_root == final.thread_root == question.event_id
    assert tool_result(model_server, "m-helper") == "expert answered: It is 42."
    assert answered == ["expert", "helper"]  # each answer fires the message hooks as its own agent's


async def test_handoff_turn_is_claimed_in_the_journal_and_passes_message_received(make_bench, model_server):
    received: list[tuple[str, str, str]] = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def seen(ctx: Any) -> None:
        envelope = ctx.envelope
        received.append((envelope.agent_name, envelope.source_event_id, envelope.origin.requester_id))

    model_server.script(
        ToolCall("delegate_task", {"agent_name": "expert", "task": "what is the answer?"}),
        Text("The expert says 42."),
        model="m-helper",
    )
    model_server.script(Text("It is 42."), model="m-expert")
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={})
    bench = await make_bench(agents.pop("agents"), registry=registry_of(seen), **agents)
    question = ask(bench, "helper", "hard question")

    await bench.deliver(question)
    await bench.settle()

    handed, _ = bench.client("helper").messages
    journal = bench.daemon.stores.journal
    assert journal.seen("expert", handed.event_id)  # the hand-off's turn, claimed like every door's
    assert not journal.seen("helper", handed.event_id)  # the asker's own question is no turn of its own
    assert journal.pending("expert") == [] and journal.pending("helper") == []
    assert ("expert", handed.event_id, ALICE) in received
    assert tool_result(model_server, "m-helper") == "expert answered: It is 42."


async def test_handoff_question_already_claimed_is_not_answered_twice(make_bench, model_server):
    model_server.script(
        ToolCall("delegate_task", {"agent_name": "expert", "task": "x"}), Text("done"), model="m-helper"
    )
    model_server.script(Text("should not be asked"), model="m-expert")
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={})
    bench = await make_bench(agents.pop("agents"), **agents)
    question = ask(bench, "helper", "question")
    # The event after the question is the helper's first message, the hand-off's: already the expert's turn.
    handed_id = f"$ev{int(question.event_id.removeprefix('$ev')) + 1}"
    bench.daemon.stores.journal.claim("expert", handed_id)

    await bench.deliver(question)
    await bench.settle()

    assert bench.client("helper").messages[0].event_id == handed_id
    assert tool_result(model_server, "m-helper") == "expert did not answer (no answer was given)."
    assert bench.client("expert").messages == []


async def test_handoff_in_a_circle_is_refused_and_the_second_agent_answers_itself(make_bench, model_server):
    model_server.script(
        ToolCall("delegate_task", {"agent_name": "expert", "task": "help"}), Text("ok"), model="m-helper"
    )
    model_server.script(
        ToolCall("delegate_task", {"agent_name": "helper", "task": "you do it"}), Text("Fine, 7."), model="m-expert"
    )
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={"delegate_to": ["helper"]})
    bench = await make_bench(agents.pop("agents"), **agents)

    await bench.deliver(ask(bench, "helper", "question"))
    await bench.settle()

    refusal = tool_result(model_server, "m-expert")
    assert refusal.startswith("Hand-off refused: that would go in a circle (helper → expert → helper)")
    assert [m.body for m in bench.client("expert").messages] == ["Fine, 7."]
    assert tool_result(model_server, "m-helper") == "expert answered: Fine, 7."


@pytest.mark.parametrize(
    ("target", "reason"),
    [("stranger", "you may hand questions to expert, outsider only"), ("outsider", "outsider is not in this room")],
)
async def test_handoff_to_an_agent_not_allowed_or_not_in_the_room_is_refused(make_bench, model_server, target, reason):
    model_server.script(ToolCall("delegate_task", {"agent_name": target, "task": "x"}), Text("alone"), model="m-helper")
    agents = world(
        model_server, helper={"delegate_to": ["expert", "outsider"]}, expert={}, outsider={"rooms": []}, stranger={}
    )
    bench = await make_bench(agents.pop("agents"), **agents)
    await bench.bots["outsider"].leave(LOBBY)

    await bench.deliver(ask(bench, "helper", "question"))
    await bench.settle()

    assert tool_result(model_server, "m-helper") == f"Hand-off refused: {reason}."
    assert [m.body for m in bench.client("helper").messages] == ["alone"]
    assert bench.client("outsider").messages == [] and bench.client("stranger").messages == []


async def test_handoff_from_a_turn_at_the_end_of_a_bot_chain_is_refused(make_bench, model_server):
    model_server.script(ToolCall("delegate_task", {"agent_name": "expert", "task": "x"}), Text("no"), model="m-helper")
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={})
    bench = await make_bench(agents.pop("agents"), **agents)

    # Another bot's answer (one hop) asks the helper: the helper's answer is the second bot answer in a row.
    await bench.deliver(ask(bench, "helper", "from a bot", sender=bench.user_id("router"), **{HOPS_KEY: 1}))
    await bench.settle()

    assert tool_result(model_server, "m-helper").startswith(
        "Hand-off refused: the conversation between agents is as long as it may get"
    )
    assert bench.client("expert").messages == []
