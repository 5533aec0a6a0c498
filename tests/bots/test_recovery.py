"""After a crash: streamed answers cut short are marked, and unfinished turns replayed through the bot's handlers."""

from __future__ import annotations

import dataclasses

import pytest

from mindroom.bots.recovery import INTERRUPTED_TEXT, recover_interrupted
from mindroom.matrix import MatrixEventKind
from mindroom.testing.model_server import Echo
from tests.bots.bench import ALICE, LOBBY

pytestmark = pytest.mark.asyncio

HELPER = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}


async def test_recovery_marks_a_streamed_answer_cut_short_as_interrupted(make_bench):
    bench = await make_bench(HELPER)
    journal = bench.daemon.stores.journal
    client = bench.client("helper")
    shown = await client.send_message(LOBBY, "half an ans ⋯", thread_root="$q", txn_id="txn-stream")
    journal.begin_answer("helper", LOBBY, "txn-stream", "$q", "$q")
    journal.answer_sent("txn-stream", shown)
    journal.claim("helper", "$q", {"not": "replayed: its answer is marked instead"})

    await recover_interrupted(bench.bots["helper"], journal, bench.bots["helper"].handlers)
    await bench.settle()

    [edit] = client.edits
    assert (edit.target_event_id, edit.body) == (shown, INTERRUPTED_TEXT)
    assert journal.open_answers("helper") == [] and journal.pending("helper") == []


async def test_recovery_of_an_answer_whose_first_send_was_cut_finds_that_send_by_its_transaction(make_bench):
    bench = await make_bench(HELPER)
    journal = bench.daemon.stores.journal
    client = bench.client("helper")
    journal.begin_answer("helper", LOBBY, "txn-stream", "$q", "$q")  # the crash came before the send returned

    await recover_interrupted(bench.bots["helper"], journal, bench.bots["helper"].handlers)

    [message] = client.messages
    assert message.txn_id == "txn-stream" and message.body == INTERRUPTED_TEXT
    assert journal.open_answers("helper") == []


async def test_recovery_replays_an_unfinished_turn_through_the_handlers_the_bot_was_given(make_bench, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench(HELPER)
    journal = bench.daemon.stores.journal
    question = bench.server.message(LOBBY, ALICE, "are you back?", at_ms=1)  # from before this run
    journal.claim("helper", question.event_id, dataclasses.asdict(question))
    replayed: list[str] = []
    handler = bench.bots["helper"].handlers[MatrixEventKind.MESSAGE]

    async def counting(entity, event, *, replay=False):
        replayed.append(event.event_id)
        await handler(entity, event, replay=replay)

    await recover_interrupted(bench.bots["helper"], journal, {MatrixEventKind.MESSAGE: counting})
    await bench.settle()

    assert replayed == [question.event_id]
    [answer] = bench.client("helper").messages
    assert answer.reply_to == question.event_id and answer.body == "echo: are you back?"
    assert journal.pending("helper") == []


async def test_recovery_completes_a_pending_event_the_bot_no_longer_handles(make_bench):
    bench = await make_bench(HELPER)
    journal = bench.daemon.stores.journal
    member = bench.server.add(LOBBY, ALICE, "m.room.member", {"membership": "join"})
    journal.claim("helper", member.event_id, dataclasses.asdict(member))

    await recover_interrupted(bench.bots["helper"], journal, bench.bots["helper"].handlers)

    assert journal.pending("helper") == []


async def test_recovery_completes_a_replayed_turn_that_ingress_now_drops(make_bench, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    bench = await make_bench(HELPER)
    journal = bench.daemon.stores.journal
    # Asked before the crash by someone the config no longer lets in: ingress drops the replay.
    question = bench.server.message(LOBBY, "@mallory:localhost", "are you back?", at_ms=1)
    journal.claim("helper", question.event_id, dataclasses.asdict(question))

    await recover_interrupted(bench.bots["helper"], journal, bench.bots["helper"].handlers)
    await bench.settle()

    assert bench.client("helper").messages == []
    assert journal.pending("helper") == []  # not replayed again at every start
