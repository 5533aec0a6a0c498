"""The stream status on an agent's reply (`io.mindroom.stream_status`), on recording clients: what each state sends."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY
from mindroom.bots.formatting import with_stream_status
from mindroom.bots.recovery import recover_interrupted
from mindroom.constants import (
    HOPS_KEY,
    STREAM_STATUS_APPROVAL_PENDING,
    STREAM_STATUS_CANCELLED,
    STREAM_STATUS_COMPLETED,
    STREAM_STATUS_ERROR,
    STREAM_STATUS_INTERRUPTED,
    STREAM_STATUS_KEY,
    STREAM_STATUS_STREAMING,
)
from mindroom.testing.model_server import Echo, HttpError, Stall, Stream, Text, ToolCall
from tests.bots.bench import ALICE, LOBBY, until

pytestmark = pytest.mark.asyncio

HELPER = {"display_name": "Helper", "rooms": ["lobby"]}


def status(content: dict[str, Any]) -> Any:
    return content.get(STREAM_STATUS_KEY)


def edit_statuses(content: dict[str, Any]) -> tuple[Any, Any]:
    """An edit's status twice: where clients that apply `m.new_content` read it, and at its top level."""
    return status(content["m.new_content"]), status(content)


async def test_stream_status_content_the_daemon_status_wins_over_a_hook_extra():
    extra = {"io.mindroom.stream_status_note": "kept", STREAM_STATUS_KEY: STREAM_STATUS_STREAMING}

    content = with_stream_status(extra, STREAM_STATUS_COMPLETED)

    assert content == {"io.mindroom.stream_status_note": "kept", STREAM_STATUS_KEY: STREAM_STATUS_COMPLETED}
    assert extra[STREAM_STATUS_KEY] == STREAM_STATUS_STREAMING  # the hook's dict is left as it was
    assert with_stream_status(None, STREAM_STATUS_ERROR) == {STREAM_STATUS_KEY: STREAM_STATUS_ERROR}


async def test_stream_status_a_whole_reply_is_sent_completed(make_bench, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench({"helper": HELPER})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello"))
    await bench.settle()

    [answer] = bench.client("helper").messages
    assert status(answer.content) == STREAM_STATUS_COMPLETED
    assert answer.content[HOPS_KEY] == 1


async def test_stream_status_a_streamed_reply_streams_then_completes(make_bench, model_server):
    model_server.set_default(Stream(["Hello", " there", ", friend", "."], delay_s=0.15))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "greet me"))
    await bench.settle()

    client = bench.client("helper")
    [message] = client.messages
    assert status(message.content) == STREAM_STATUS_STREAMING
    *updates, final = client.edits
    assert updates, "no edit while streaming"
    assert all(edit_statuses(edit.content) == (STREAM_STATUS_STREAMING,) * 2 for edit in updates)
    assert edit_statuses(final.content) == (STREAM_STATUS_COMPLETED,) * 2
    assert final.body == "Hello there, friend."


async def test_stream_status_a_stopped_reply_ends_cancelled(make_bench, model_server):
    model_server.set_default(Stream([f"word{i} " for i in range(40)], delay_s=0.1))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})
    client = bench.client("helper")
    await bench.deliver(bench.server.message(LOBBY, ALICE, "talk a while"))
    await until(lambda: client.messages)

    await bench.deliver(bench.server.reaction(LOBBY, ALICE, client.messages[0].event_id, "🛑"))
    await bench.settle()

    final = client.edits[-1]
    assert final.body.endswith("(stopped)")
    assert edit_statuses(final.content) == (STREAM_STATUS_CANCELLED,) * 2


async def test_stream_status_a_reply_cut_by_shutdown_ends_interrupted(make_bench, model_server):
    model_server.set_default(Stream(["The beginning", " of a very slow answer"], delay_s=30))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})
    client = bench.client("helper")
    await bench.deliver(bench.server.message(LOBBY, ALICE, "take your time"))
    await until(lambda: client.messages)

    await bench.bots["helper"].stop(grace_s=0.05)

    final = client.edits[-1]
    assert final.target_event_id == client.messages[0].event_id
    assert edit_statuses(final.content) == (STREAM_STATUS_INTERRUPTED,) * 2


async def test_stream_status_a_reply_marked_after_a_crash_is_interrupted(make_bench):
    bench = await make_bench({"helper": HELPER})
    journal = bench.daemon.stores.journal
    client = bench.client("helper")
    shown = await client.send_message(LOBBY, "half an ans ⋯", thread_root="$q", txn_id="txn-stream")
    journal.begin_answer("helper", LOBBY, "txn-stream", "$q", "$q")
    journal.answer_sent("txn-stream", shown)
    journal.begin_answer("helper", LOBBY, "txn-lost", "$r", "$r")  # cut before its first send returned

    await recover_interrupted(bench.bots["helper"], journal, bench.bots["helper"].handlers)

    assert [edit_statuses(edit.content) for edit in client.edits] == [(STREAM_STATUS_INTERRUPTED,) * 2] * 2
    resent = next(message for message in client.messages if message.txn_id == "txn-lost")
    assert status(resent.content) == STREAM_STATUS_INTERRUPTED


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_stream_status_a_model_failure_ends_error(make_bench, model_server, streaming: bool):
    model_server.set_default(HttpError(500, "the model fell over"))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello?"))
    await bench.settle()

    [error] = bench.client("helper").messages
    assert error.body.startswith("⚠️") and status(error.content) == STREAM_STATUS_ERROR


async def test_stream_status_a_stream_that_fails_midway_ends_error(make_bench, model_server):
    model_server.set_default(Stall(["a start"], seconds=0.5))  # then the connection drops
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": True})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello?"))
    await bench.settle()

    client = bench.client("helper")
    [message] = client.messages
    assert status(message.content) == STREAM_STATUS_STREAMING
    final = client.edits[-1]
    assert final.body.startswith("⚠️") and edit_statuses(final.content) == (STREAM_STATUS_ERROR,) * 2


async def test_stream_status_an_approval_card_says_approval_pending_until_decided(make_bench, model_server):
    agents = {"helper": {**HELPER, "tools": ["calculator"]}}
    rules = {"rules": [{"match": "calculate", "action": "require_approval"}]}
    bench = await make_bench(agents, tool_approval=rules)
    client = bench.client("helper")
    model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("It is 42."))
    await bench.deliver(bench.server.message(LOBBY, ALICE, "six times seven?"))
    await until(lambda: client.messages)
    [card] = client.messages

    assert APPROVAL_CONTENT_KEY in card.content and status(card.content) == STREAM_STATUS_APPROVAL_PENDING
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, card.event_id, "✅"))
    await bench.settle()

    [outcome] = client.edits
    assert outcome.target_event_id == card.event_id
    assert edit_statuses(outcome.content) == (None, None)  # decided: a notice, no longer a reply waiting
    [_, answer] = client.messages
    assert answer.body == "It is 42." and status(answer.content) == STREAM_STATUS_COMPLETED


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_stream_status_the_answer_to_an_edited_question_is_edited_to_completed(
    make_bench, model_server, streaming: bool
):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})
    question = bench.server.message(LOBBY, ALICE, "what is the capital of Frence")
    await bench.deliver(question)
    await bench.settle()
    client = bench.client("helper")
    edits_before = len(client.edits)

    await bench.deliver(bench.server.edit(LOBBY, ALICE, question.event_id, "what is the capital of France"))
    await bench.settle()

    [answer] = client.messages
    *updates, final = client.edits[edits_before:]
    assert final.target_event_id == answer.event_id and final.body == "echo: what is the capital of France"
    assert edit_statuses(final.content) == (STREAM_STATUS_COMPLETED,) * 2
    assert all(edit_statuses(edit.content) == (STREAM_STATUS_STREAMING,) * 2 for edit in updates)


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_stream_status_every_message_of_a_long_answer_says_how_it_stands(make_bench, model_server, streaming):
    long_answer = " ".join(f"word{i}" for i in range(8000))  # about 70 kB: three messages
    model_server.set_default(Stream([long_answer]) if streaming else Text(long_answer))
    bench = await make_bench({"helper": HELPER}, defaults={"enable_streaming": streaming})

    await bench.deliver(bench.server.message(LOBBY, ALICE, "say a lot"))
    await bench.settle()

    client = bench.client("helper")
    first, *more = client.messages
    assert len(more) >= 2, "the answer did not continue in more messages"
    assert [status(part.content) for part in more] == [STREAM_STATUS_COMPLETED] * len(more)
    if streaming:
        assert edit_statuses(client.edits[-1].content) == (STREAM_STATUS_COMPLETED,) * 2
    else:
        assert status(first.content) == STREAM_STATUS_COMPLETED
    # The answer is there once: what the first message shows, then the rest (no part sent twice).
    bodies = [client.edits[-1].body if streaming else first.body, *(part.body for part in more)]
    assert " ".join(bodies).split() == long_answer.split()
