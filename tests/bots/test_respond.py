"""Answers through the whole pipeline on recording clients: who answers, edited questions, streaming, stops."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from mindroom.bots.turn_mind import TurnMind
from mindroom.constants import HOPS_KEY, ORIGINAL_SENDER_KEY, SCHEDULE_ID_KEY
from mindroom.hooks import EVENT_MESSAGE_BEFORE_RESPONSE, EVENT_MESSAGE_CANCELLED, hook
from mindroom.matrix.delivery import STREAM_CURSOR
from mindroom.testing.memory_script import is_memory_request, script_memory
from mindroom.testing.model_replies import content_text
from mindroom.testing.model_server import (
    Delay,
    Echo,
    HttpError,
    ScriptedModelServer,
    Stream,
    Text,
    last_user_message,
)
from tests.bots.bench import ALICE, LOBBY, MALLORY, Bench, bench_config, registry_of, until

pytestmark = pytest.mark.asyncio

HELPER = {"display_name": "Helper", "rooms": ["lobby"]}


async def ask_and_edit(bench, streaming: bool):
    """Alice asks, the helper answers; Alice edits the question, the helper answers again."""
    question = bench.server.message(LOBBY, ALICE, "what is the capital of Frence")
    await bench.deliver(question)
    await bench.settle()
    [answer] = bench.client("helper").messages
    await bench.deliver(bench.server.edit(LOBBY, ALICE, question.event_id, "what is the capital of France"))
    await bench.settle()
    return question, answer


async def test_respond_the_only_agent_answers_in_the_thread_of_the_question(make_bench, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench({"helper": HELPER})
    question = bench.server.message(LOBBY, ALICE, "hello there")

    await bench.deliver(question)
    await bench.settle()

    [answer] = bench.client("helper").messages
    assert (answer.thread_root, answer.reply_to) == (question.event_id, question.event_id)
    assert answer.body == "echo: hello there"
    assert answer.content[HOPS_KEY] == 1
    assert bench.client("router").messages == []
    assert bench.daemon.stores.journal.pending("helper") == []  # the claimed turn completed


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_respond_an_edited_question_edits_the_answer_in_place(make_bench, model_server, streaming: bool):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})

    question, answer = await ask_and_edit(bench, streaming)

    client = bench.client("helper")
    assert client.messages == [answer]  # no second answer to the edited question
    final = client.edits[-1]
    assert final.target_event_id == answer.event_id
    assert final.body == "echo: what is the capital of France"
    record = bench.daemon.stores.answers.for_question("helper", question.event_id)
    assert record is not None and record.response_event_id == answer.event_id


async def test_respond_an_edit_by_someone_else_is_no_question(make_bench, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench({"helper": HELPER})
    question = bench.server.message(LOBBY, ALICE, "first")
    await bench.deliver(question)
    await bench.settle()
    requests = len(model_server.requests)

    await bench.deliver(bench.server.edit(LOBBY, MALLORY, question.event_id, "first, rewritten"))
    await bench.settle()

    assert len(model_server.requests) == requests
    assert bench.client("helper").edits == []


async def test_respond_streams_one_message_edited_as_text_arrives(make_bench, model_server: ScriptedModelServer):
    model_server.set_default(Stream(["Hello", " there", ", friend", "."], delay_s=0.15))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "greet me"))
    await bench.settle()

    client = bench.client("helper")
    [message] = client.messages
    assert message.body.endswith(STREAM_CURSOR)
    assert {edit.target_event_id for edit in client.edits} == {message.event_id}
    assert len(client.edits) >= 2  # at least one update while streaming, then the final text
    assert client.edits[-1].body == "Hello there, friend."
    assert bench.daemon.stores.journal.open_answers("helper") == []  # the open answer was ended


async def test_respond_a_stop_reaction_ends_the_stream_but_only_from_someone_authorized(make_bench, model_server):
    model_server.set_default(Stream([f"word{i} " for i in range(40)], delay_s=0.1))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})
    client = bench.client("helper")
    await bench.deliver(bench.server.message(LOBBY, ALICE, "talk a while"))
    await until(lambda: client.messages)
    stream = client.messages[0]

    await bench.deliver(bench.server.reaction(LOBBY, MALLORY, stream.event_id, "🛑"))
    await until(lambda: len(client.edits) >= 2)  # still streaming after the stranger's stop
    assert not any(edit.body.endswith("(stopped)") for edit in client.edits)
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, stream.event_id, "🛑"))
    await bench.settle()

    final = client.edits[-1]
    assert final.target_event_id == stream.event_id and final.body.endswith("(stopped)")
    assert "word39" not in final.body
    assert bench.daemon.stores.journal.open_answers("helper") == []


async def test_respond_a_streamed_answer_a_hook_suppresses_is_removed_and_reported(make_bench, model_server):
    cancelled: list[str] = []

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def suppress(ctx: Any) -> None:
        ctx.draft.suppress = True

    @hook(EVENT_MESSAGE_CANCELLED)
    async def noticed(ctx: Any) -> None:
        cancelled.append(ctx.info.failure_reason)

    model_server.set_default(Stream(["not ", "to ", "be ", "seen"], delay_s=0.05))
    registry = registry_of(suppress, noticed)
    bench = await make_bench({"helper": HELPER}, registry=registry, defaults={"enable_streaming": True})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "say something"))
    await bench.settle()

    client = bench.client("helper")
    [stream] = client.messages
    assert [r.target_event_id for r in client.redactions] == [stream.event_id]
    assert cancelled == ["suppressed_by_hook"]
    assert bench.daemon.stores.journal.open_answers("helper") == []


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_respond_a_model_failure_is_answered_with_the_error(make_bench, model_server, streaming: bool):
    model_server.set_default(HttpError(500, "the model fell over"))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello?"))
    await bench.settle()

    [error] = bench.client("helper").messages
    assert error.body.startswith("⚠️")
    journal = bench.daemon.stores.journal
    assert journal.open_answers("helper") == [] and journal.pending("helper") == []


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_respond_a_burst_of_edits_is_answered_once_more_with_the_latest(make_bench, model_server, streaming):
    model_server.when(lambda r: last_user_message(r).endswith("version 0"), Text("the first answer"))
    model_server.when(lambda r: last_user_message(r).endswith("version 15"), Text("the answer to version 15"))
    model_server.set_default(Delay(0.3, Stream([f"older{i} " for i in range(10)], delay_s=0.1)))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})
    client = bench.client("helper")
    question = bench.server.message(LOBBY, ALICE, "version 0")
    await bench.deliver(question)
    await bench.settle()
    [answer] = client.messages
    asked, shown = len(model_server.requests), len(client.edits)

    await bench.deliver(bench.server.edit(LOBBY, ALICE, question.event_id, "version 1"))
    await until(lambda: len(model_server.requests) > asked)  # the first edit is being answered
    if streaming:
        await until(lambda: len(client.edits) > shown)  # and its answer is showing
    for n in range(2, 16):
        await bench.deliver(bench.server.edit(LOBBY, ALICE, question.event_id, f"version {n}"))
        await asyncio.sleep(0.02)
    await bench.settle()

    calls = [last_user_message(r) for r in model_server.requests[asked:]]
    assert 1 <= len(calls) <= 2 and calls[-1].endswith("version 15")
    assert client.messages == [answer]
    final = client.edits[-1]
    assert (final.target_event_id, final.body) == (answer.event_id, "the answer to version 15")
    record = bench.daemon.stores.answers.for_question("helper", question.event_id)
    assert record is not None and record.response_event_id == answer.event_id
    assert bench.daemon.stores.journal.pending("helper") == []


# -- memory: recalled for the person a relayed message speaks for --------------------------------------------

ALICE_FACT = "Alice's favourite colour is teal"
RELAY_FACT = "The relaying account's favourite colour is grey"


class MindfulBench(Bench):
    """The pipeline with memory: the run's `TurnMind` recalls and writes down what agents remember."""

    def _bot(self, name: str) -> Any:
        if self.daemon.mind is None:  # before the first bot takes the run's responder
            self.daemon = dataclasses.replace(self.daemon, mind=TurnMind(self.daemon.paths, None))
        return super()._bot(name)


async def remember(bench: MindfulBench, model_server: ScriptedModelServer, person: str, said: str, fact: str) -> None:
    """The helper writes `fact` down about `person`, as after a turn in which they said `said`."""
    mind = bench.daemon.mind
    assert mind is not None
    model_server.reset()
    script_memory(model_server, said, fact)
    config = bench.daemon.live.config
    mind.after_answer(config, "helper", person, f"my favourite colour is {said}", "Noted.")
    await mind.settled()
    assert fact in await mind.recall(config, "helper", person)


RELAYS = [
    pytest.param("router", {SCHEDULE_ID_KEY: "kitchen"}, id="router-posting-a-schedule"),
    pytest.param("coder", {}, id="agent-relaying"),
]


@pytest.mark.parametrize(("relay", "extra"), RELAYS)
async def test_respond_recalls_the_memories_of_the_person_a_relayed_message_speaks_for(
    tmp_path, model_server: ScriptedModelServer, relay: str, extra: dict[str, Any]
):
    agents = {
        "helper": {**HELPER, "memory_backend": "mem0"},
        "coder": {"display_name": "Coder", "rooms": ["lobby"]},
    }
    bench = MindfulBench(tmp_path, bench_config(model_server, agents))
    await bench.start()
    try:
        relay_id, helper_id = bench.user_id(relay), bench.user_id("helper")
        await remember(bench, model_server, ALICE, "teal", ALICE_FACT)
        await remember(bench, model_server, relay_id, "grey", RELAY_FACT)
        model_server.reset()
        model_server.when(is_memory_request, Text("Nothing to note."))
        model_server.set_default(Text("Teal, then."))
        relayed = {ORIGINAL_SENDER_KEY: ALICE, "m.mentions": {"user_ids": [helper_id]}, **extra}

        await bench.deliver(bench.server.message(LOBBY, relay_id, "kitchen colour?", extra_content=relayed))
        await bench.settle()
        assert bench.daemon.mind is not None
        await bench.daemon.mind.settled()
    finally:
        await bench.stop()

    assert [m.body for m in bench.client("helper").messages] == ["Teal, then."]
    [asked] = [request for request in model_server.requests if not is_memory_request(request)]
    system = "\n".join(content_text(m.get("content")) for m in asked["messages"] if m["role"] == "system")
    assert ALICE_FACT in system
    assert RELAY_FACT not in system
