"""The doors of the one turn on the bench: each builds its envelope in the 2026 shape (the older shape's adapter
serves plugins only), each turn is claimed in the journal, and only a Matrix event is kept with its claim."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mindroom.bots.doors import DIRECT, Arrival, Door, Route
from mindroom.bots.ingress import InboundMessage
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, hook, older_envelope
from mindroom.matrix import MatrixEvent
from mindroom.testing.model_server import Text, ToolCall
from tests.bots.bench import Bench, registry_of
from tests.bots.support import ingress_of
from tests.bots.test_handoff import ask, world

pytestmark = pytest.mark.asyncio

ELSEWHERE = "!elsewhere:localhost"


@pytest.fixture
def flat_shapes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keywords of every call the older shape's adapter turns into the 2026 shape, in order."""
    calls: list[dict[str, Any]] = []
    convert = older_envelope._canonical_keywords

    def counted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        calls.append(dict(kwargs))
        return convert(args, kwargs)

    monkeypatch.setattr(older_envelope, "_canonical_keywords", counted)
    return calls


def accepted(bench: Bench, event: MatrixEvent, entity: str = "helper") -> InboundMessage:
    inbound = ingress_of(bench.daemon).message(bench.bots[entity], bench.daemon.live, event)
    assert isinstance(inbound, InboundMessage)
    return inbound


async def test_doors_build_the_2026_envelope_and_only_a_plugin_goes_through_the_adapter(
    make_bench, model_server, flat_shapes
):
    moved: list[Any] = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def older_plugin(ctx: Any) -> None:
        moved.append(dataclasses.replace(ctx.envelope, room_id=ELSEWHERE))  # the hooks spec's flat name

    model_server.script(
        ToolCall("delegate_task", {"agent_name": "expert", "task": "what is the answer?"}),
        Text("The expert says 42."),
        model="m-helper",
    )
    model_server.script(Text("It is 42."), model="m-expert")
    agents = world(model_server, helper={"delegate_to": ["expert"]}, expert={})
    bench = await make_bench(agents.pop("agents"), registry=registry_of(older_plugin), **agents)

    await bench.deliver(ask(bench, "helper", "hard question"))  # the Matrix door, then the hand-off's
    await bench.settle()

    assert [m.body for m in bench.client("expert").messages] == ["It is 42."]
    assert {envelope.agent_name for envelope in moved} >= {"helper", "expert"}
    assert len(flat_shapes) == len(moved)  # the plugin's calls, and none for the daemon's own envelopes
    assert all(call["room_id"] == ELSEWHERE for call in flat_shapes)
    assert all(envelope.target.room_id == ELSEWHERE for envelope in moved)


async def test_doors_only_a_matrix_event_an_entity_acts_on_is_kept_with_its_claim(make_bench, model_server):
    bench = await make_bench({"helper": {"display_name": "Helper"}})
    event = ask(bench, "helper", "hi")
    inbound = accepted(bench, event)
    entity, live = bench.bots["helper"], bench.daemon.live

    acting = Arrival(Door.MATRIX, entity, live, inbound, Route(acts=True), event=event)
    observing = Arrival(Door.MATRIX, entity, live, inbound, Route(acts=False), event=event)
    replayed = Arrival(Door.MATRIX, entity, live, inbound, Route(acts=False), event=event, replay=True)
    api = Arrival(Door.API, entity, live, inbound)

    assert acting.kept is not None and MatrixEvent(**acting.kept) == event
    assert replayed.kept is not None
    assert observing.kept is None and api.kept is None
    assert api.route is DIRECT


async def test_doors_a_question_at_a_door_is_answered_once(make_bench, model_server):
    model_server.set_default(Text("hello"))
    bench = await make_bench({"helper": {"display_name": "Helper"}})
    event = ask(bench, "helper", "hi")
    runner = bench.daemon.runner  # the run's one turn, as the HTTP app and the hand-offs call it
    arrival = Arrival(Door.HANDOFF, bench.bots["helper"], bench.daemon.live, accepted(bench, event))

    await runner.run(arrival)
    await runner.run(arrival)  # the same question again: already taken
    await bench.settle()

    journal = bench.daemon.stores.journal
    assert runner.commands is None  # it runs no chat command
    assert journal.seen("helper", event.event_id) and journal.pending("helper") == []
    assert [m.body for m in bench.client("helper").messages] == ["hello"]
