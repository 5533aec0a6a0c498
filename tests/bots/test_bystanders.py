"""Entities that see a message another agent answers: what they do, keep and spend.

Every entity in a room sees each of its messages. One that does not answer it still fires `message:received`
(the hook contract is per entity) and claims the message so it never does so twice; with no such hook
there is nothing for it to do, and it keeps nothing and starts no task.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mindroom.hooks import hook
from mindroom.hooks.types import EVENT_MESSAGE_RECEIVED
from mindroom.matrix import MatrixEvent, MatrixEventKind
from tests.bots.bench import ALICE, LOBBY, registry_of

pytestmark = pytest.mark.asyncio

CREW = {name: {"display_name": name.title(), "rooms": ["lobby"]} for name in ("helper", "scout", "scribe")}


def question_for(bench: Any, name: str, body: str) -> MatrixEvent:
    """A message of Alice's in the lobby that mentions agent `name`."""
    mention = {"m.mentions": {"user_ids": [bench.user_id(name)]}}
    return bench.server.message(LOBBY, ALICE, f"{name}: {body}", extra_content=mention)


async def test_bystanders_without_received_hooks_keep_nothing_and_start_no_task(make_bench):
    bench = await make_bench(CREW)
    question = question_for(bench, "helper", "hello")

    await bench.deliver(question)
    waiting = {name: len(bot.tasks.running) for name, bot in bench.bots.items()}
    await bench.settle()

    journal = bench.daemon.stores.journal
    assert waiting == {"router": 0, "helper": 1, "scout": 0, "scribe": 0}
    assert journal.seen("helper", question.event_id)
    assert not journal.seen("scout", question.event_id) and not journal.seen("scribe", question.event_id)
    assert [message.body for message in bench.client("helper").messages] != []
    assert bench.client("scout").messages == [] and bench.client("scribe").messages == []


async def test_bystanders_fire_received_once_each_and_keep_no_pending_turn(make_bench):
    fired: list[tuple[str, str]] = []
    pending: dict[str, list[str]] = {}
    benches: list[Any] = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def observe(ctx: Any) -> None:
        name = ctx.envelope.agent_name
        fired.append((name, ctx.envelope.source_event_id))
        pending[name] = [turn.event_id for turn in benches[0].daemon.stores.journal.pending(name)]

    bench = await make_bench(CREW, registry=registry_of(observe))
    benches.append(bench)
    question = question_for(bench, "helper", "hello")

    await bench.deliver(question)
    await bench.settle()
    await bench.deliver(question)  # delivered again (a retried transaction, an overlapping sync)
    await bench.settle()

    journal = bench.daemon.stores.journal
    assert sorted(fired) == sorted((name, question.event_id) for name in ("router", *CREW))
    # Only the answering agent's claim keeps the message for a restart to finish; the others only observe it.
    assert pending == {"router": [], "helper": [question.event_id], "scout": [], "scribe": []}
    assert all(journal.seen(name, question.event_id) for name in CREW)
    assert len(bench.client("helper").messages) == 1


async def test_bystanders_a_hook_scoped_to_one_agent_wakes_only_that_one(make_bench):
    fired: list[str] = []

    @hook(EVENT_MESSAGE_RECEIVED, agents=["scribe"])
    async def observe(ctx: Any) -> None:
        fired.append(ctx.envelope.agent_name)

    bench = await make_bench(CREW, registry=registry_of(observe))
    question = question_for(bench, "helper", "hello")

    await bench.deliver(question)
    await bench.settle()

    journal = bench.daemon.stores.journal
    assert fired == ["scribe"]
    assert journal.seen("scribe", question.event_id) and not journal.seen("scout", question.event_id)


async def test_bystanders_a_handler_that_fails_at_once_is_logged_and_the_bot_goes_on(make_bench):
    bench = await make_bench(CREW)
    bot = bench.bots["scout"]
    handlers = dict(bot.handlers)

    def broken(entity: Any, event: MatrixEvent, *, replay: bool = False) -> Any:
        raise RuntimeError("broken before any await")

    bot._handlers[MatrixEventKind.MESSAGE] = broken
    await bench.deliver(question_for(bench, "helper", "first"))
    bot._handlers = handlers
    await bench.settle()
    await bench.deliver(question_for(bench, "scout", "second"))
    await bench.settle()

    assert [message.body for message in bench.client("scout").messages] != []


async def test_bystanders_a_turn_left_pending_by_an_entity_that_now_only_observes_is_completed(make_bench):
    from mindroom.bots.recovery import recover_interrupted

    bench = await make_bench(CREW)
    question = question_for(bench, "helper", "hello")
    journal = bench.daemon.stores.journal
    journal.claim("scout", question.event_id, dataclasses.asdict(question))  # kept before the restart

    await recover_interrupted(bench.bots["scout"], journal, bench.bots["scout"].handlers)
    await bench.settle()

    assert journal.pending("scout") == []
    assert bench.client("scout").messages == []
