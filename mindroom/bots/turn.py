"""One turn for every door. This module owns the order in which hooks fire:

door -> claim -> message:received -> commands -> routing -> respond
(respond: message:enrich -> generate -> message:before_response -> send -> message:after_response)

`TurnRunner.run` is the one turn; a door (`mindroom.bots.doors`) hands it an `Arrival`: the Matrix door
(`MessagePipeline`, below: ingress and the routing decision), the `/v1` door (`mindroom.api.completions`) and
the hand-off (`mindroom.bots.handoff`). A turn reads the live state once, at its start (the door does, and
passes it on), and runs on that one generation to its end. The claim is a context manager
(`mindroom.bots.lifecycle.claimed`): whatever way the turn ends, it is completed, unless shutdown cancelled it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import structlog

from mindroom import ai
from mindroom.bots.channel import Turn
from mindroom.bots.commands.table import CommandTable, handle_command, is_command
from mindroom.bots.coordination import TurnCoordinator
from mindroom.bots.directory import Directory
from mindroom.bots.doors import Arrival, Chains, Door, Route
from mindroom.bots.edits import EditBursts, EditWatch
from mindroom.bots.ingress import InboundMessage, Ingress, IngressDrop
from mindroom.bots.lifecycle import claimed, stable_correlation_id
from mindroom.bots.media import MediaIntake
from mindroom.bots.respond import Responder
from mindroom.bots.routing import decide_route
from mindroom.bots.runtime import HANDLED, Entity, LiveCell, LiveState
from mindroom.bots.sharing import EventMemo
from mindroom.hooks.context import HookBindings, MessageEnvelope, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.trace import hook_trace
from mindroom.hooks.types import EVENT_MESSAGE_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent
from mindroom.state.journal import TurnJournal

__all__ = [
    "ASSIGNMENT_TIMEOUT_S",
    "ORDERED_ANSWER_TIMEOUT_S",
    "MessagePipeline",
    "TurnRunner",
    "router_choice",
    "stable_correlation_id",
]

logger = get_logger(__name__)

ASSIGNMENT_TIMEOUT_S = 120.0
ORDERED_ANSWER_TIMEOUT_S = 600.0


async def router_choice(
    live: LiveState,
    env: Mapping[str, str],
    candidates: tuple[str, ...],
    body: str,
    room_id: str,
    thread_id: str | None,
    room_keys: AbstractSet[str],
) -> str:
    """The agent the router's model picks among `candidates` for `body` (the first when it cannot say).

    The router's model is chosen as every model of a turn is (`ChatSettings.model_name`): the thread's, the
    room's, `room_models` for the room's names, else `router.model`.
    """
    config = live.config
    entities = config.responders()
    roles = [(name, entities[name].role or entities[name].display_name) for name in candidates]
    own = config.router.model
    model = config.models.get(
        live.settings.model_name(config.models, config.room_models, own, room_id, thread_id, room_keys)
    )
    chosen = None
    if model is not None:
        try:
            chosen = await ai.choose_agent(model, roles, body, env=env)
        except Exception as exc:  # the router must always produce a decision
            logger.warning("router model failed; using the first agent", error=str(exc) or type(exc).__name__)
    if chosen not in candidates:
        chosen = candidates[0]
    logger.info("router chose agent", chosen=chosen, candidates=list(candidates))
    return chosen


@dataclass(frozen=True, slots=True)
class TurnRunner:
    """The one turn of every door, on what it declares: the journal that holds its claim, the media stage (a
    Matrix message's attachment), the answer stages, who is where, the coordination between entities, the
    environment the router's model reads, each message's readings shared by the entities of a run, the chat
    commands (a Matrix door's; None: none run), the edits being answered, and the hand-offs' chains."""

    journal: TurnJournal
    media: MediaIntake
    responder: Responder
    directory: Directory
    coordinator: TurnCoordinator
    env: Mapping[str, str]
    readings: EventMemo
    commands: CommandTable | None = None
    edits: EditBursts = field(default_factory=EditBursts)
    """The newest edit of each question being answered again (a burst of edits is answered once more)."""
    handoffs: Chains | None = None
    """Where a running turn's chain of bot answers is known to the hand-offs it makes (None: none are made)."""

    def route(self, entity: Entity, live: LiveState, inbound: InboundMessage) -> Route:
        """What this entity may do with a Matrix message after `message:received` (decided before the claim)."""
        envelope = inbound.envelope
        if inbound.replaces is not None:
            return Route(acts=True)
        if self.commands is not None and is_command(envelope.body):
            return Route(acts=True, command=True)
        decision = decide_route(envelope.mentioned_agents, self._present(live, envelope))
        chooses = entity.is_router and decision is not None and decision.kind == "router"
        acts = chooses or (decision is not None and entity.name in decision.agents)
        return Route(acts=acts, decision=decision)

    async def run(self, arrival: Arrival) -> None:
        """The turn of `arrival`: claim, `message:received`, then route and answer (or only observe)."""
        entity, inbound = arrival.entity, arrival.inbound
        event_id = inbound.envelope.source_event_id
        with claimed(self.journal, entity.name, event_id, arrival.kept, replay=arrival.replay) as ours:
            if not ours:
                if arrival.route.acts:
                    logger.debug(
                        "event dropped at ingress",
                        agent=entity.name,
                        event_id=event_id,
                        sender=inbound.envelope.sender_id,
                        reason="already handled",
                    )
                return
            if not arrival.route.acts and not arrival.replay:
                await self._observe(arrival)
                return
            question = inbound.replaces.source_event_id if inbound.replaces is not None else None
            # Registered before the first await, so the edits of one question count in the order they came.
            with self.edits.arrived(entity.name, question, event_id) as edit:
                inbound = await self._prepared(arrival)
                correlation_id = stable_correlation_id(event_id)
                with (
                    structlog.contextvars.bound_contextvars(
                        agent=entity.name, room_id=inbound.envelope.room_id, correlation_id=correlation_id
                    ),
                    hook_trace(),  # the turn's hooks from `message:received` on (noted with its answer)
                ):
                    await self._pipeline(arrival, inbound, correlation_id, edit)

    async def _observe(self, arrival: Arrival) -> None:
        """The turn of an entity that only observes the message (another answers it): `message:received`, once.

        Its claim is for dedup alone (nothing kept, nothing to complete or to finish after a crash), and it
        has no answer, edit or trace to follow: most entities of a busy room take this path for most messages.
        """
        entity, live = arrival.entity, arrival.live
        inbound = await self._prepared(arrival)  # a voice message is heard as text
        correlation_id = stable_correlation_id(inbound.envelope.source_event_id)
        with structlog.contextvars.bound_contextvars(
            agent=entity.name, room_id=inbound.envelope.room_id, correlation_id=correlation_id
        ):
            await self._received(live, entity.bindings(live, turn=correlation_id), inbound, correlation_id)

    async def _prepared(self, arrival: Arrival) -> InboundMessage:
        """The message with a Matrix event's attachment made part of it (unchanged at other doors)."""
        if arrival.event is None:
            return arrival.inbound
        return await self.media.prepare(arrival.entity, arrival.live, arrival.inbound, arrival.event)

    async def _received(
        self, live: LiveState, bindings: HookBindings, inbound: InboundMessage, correlation_id: str
    ) -> bool:
        """`message:received`; True when a hook suppressed the message.

        A message a hook dispatched from `message:received` skips the plugin that sent it, so a plugin
        reacting to messages cannot feed on its own.
        """
        envelope = inbound.envelope
        registry = live.registry
        from_hook = envelope.message_received_depth == 1 and inbound.hook_origin_event == EVENT_MESSAGE_RECEIVED
        skipped: frozenset[str] = frozenset()
        if from_hook and envelope.hook_source:
            skipped = frozenset({envelope.hook_source.split(":", 1)[0]})
            registry = registry.without_plugin(next(iter(skipped)))
        ctx = MessageReceivedContext(
            envelope=envelope, correlation_id=correlation_id, skip_plugin_names=skipped, **bindings.fields()
        )
        await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
        return ctx.suppress

    async def _pipeline(
        self, arrival: Arrival, inbound: InboundMessage, correlation_id: str, edit: EditWatch | None
    ) -> None:
        entity, live, route = arrival.entity, arrival.live, arrival.route
        envelope = inbound.envelope
        event_id = envelope.source_event_id
        bindings = entity.bindings(live, turn=correlation_id)
        if await self._received(live, bindings, inbound, correlation_id):
            logger.debug("message suppressed by a hook", event_id=event_id)
            self._release(entity, event_id)
            return
        if inbound.replaces is not None:  # an edited question: only the agent that answered it sees it here
            again = Turn(correlation_id, bindings, replaces=inbound.replaces, channel=arrival.channel, edit=edit)
            await self.responder.respond(entity, live, envelope, again)
            return
        if route.command:
            if self.commands is not None and self._answers_command(entity, live, envelope):
                await handle_command(entity, live, envelope, self.commands)
            self._release(entity, event_id)
            return
        if route.direct:  # the door named who answers
            await self._answer(arrival, inbound, correlation_id, bindings)
            return
        decision = route.decision
        coordinator = self.coordinator
        if entity.is_router:
            if decision is not None and decision.kind == "router":
                room_id, thread = envelope.room_id, envelope.resolved_thread_id
                keys = self.directory.room_keys(room_id)
                choice = await router_choice(live, self.env, decision.agents, envelope.body, room_id, thread, keys)
                coordinator.assign(event_id, choice)
            return
        if decision is None or entity.name not in decision.agents:
            return
        try:
            if decision.kind == "router":
                if self.directory.router_in_room(envelope.room_id):
                    chosen = await coordinator.assignment(event_id, ASSIGNMENT_TIMEOUT_S)
                else:
                    chosen = decision.agents[0]
                if chosen != entity.name:
                    return
            elif decision.kind == "mentioned":
                earlier = decision.agents[: decision.agents.index(entity.name)]
                if earlier:
                    await coordinator.wait_for(event_id, earlier, ORDERED_ANSWER_TIMEOUT_S)
            await self._answer(arrival, inbound, correlation_id, bindings)
        finally:
            coordinator.finish(event_id, entity.name)

    async def _answer(
        self, arrival: Arrival, inbound: InboundMessage, correlation_id: str, bindings: HookBindings
    ) -> None:
        """The entity answers, in the door's channel; hand-offs its answer makes count on its chain."""
        answer = Turn(
            correlation_id, bindings, hops=inbound.hops + 1, image_ids=inbound.image_ids, channel=arrival.channel
        )
        with self.handoffs.turn(correlation_id, answer.hops) if self.handoffs else contextlib.nullcontext():
            await self.responder.respond(arrival.entity, arrival.live, inbound.envelope, answer)

    def _answers_command(self, entity: Entity, live: LiveState, envelope: MessageEnvelope) -> bool:
        """The router answers commands in its rooms; elsewhere the room's first agent, or each for some commands."""
        if self.directory.router_in_room(envelope.room_id):
            return entity.is_router
        command = self.commands.get(envelope.body.lstrip()[1:].partition(" ")[0]) if self.commands else None
        if command is not None and command.every_agent:
            return True
        present = self._present(live, envelope)
        return not present or present[0] == entity.name

    def _present(self, live: LiveState, envelope: MessageEnvelope) -> tuple[str, ...]:
        """The agents in the message's room, read once per message for every entity of the run."""
        room_id = envelope.room_id
        return self.readings.once(
            (envelope.source_event_id, "present"), live, lambda: self.directory.agents_in_room(room_id, live.config)
        )

    def _release(self, entity: Entity, event_id: str) -> None:
        """The router tells the agents waiting for its choice that nobody answers this message."""
        if entity.is_router:
            self.coordinator.assign(event_id, None)


@dataclass(frozen=True, slots=True)
class MessagePipeline:
    """The Matrix door, the handler of message events: the live cell it reads once per turn, ingress, and the
    one turn it hands each accepted message to."""

    cell: LiveCell
    ingress: Ingress
    turns: TurnRunner

    def __call__(self, entity: Entity, event: MatrixEvent, *, replay: bool = False) -> Awaitable[None]:
        """Run one message event through this entity's turn.

        Ingress runs at once: a message dropped there returns `HANDLED` and costs no task; so does one another
        entity answers when no hook here observes it. `replay` re-runs a turn that a crash cut short: it is
        already claimed, and older than this run.
        """
        live = self.cell.live  # the one generation this whole turn runs on
        inbound = self.ingress.message(entity, live, event, replay=replay)
        if isinstance(inbound, IngressDrop):
            if replay:  # its claim from before the crash is done with: not replayed again at every start
                logger.info("replayed turn dropped at ingress", agent=entity.name, event_id=event.event_id)
                self.turns.journal.complete(entity.name, event.event_id)
            return HANDLED
        turns = self.turns
        route = turns.route(entity, live, inbound)
        observed = route.acts or replay or live.registry.matching(EVENT_MESSAGE_RECEIVED, entity.name, event.room_id)
        if not observed:
            return HANDLED  # another entity answers, and no hook here observes it: nothing to do or keep
        return turns.run(Arrival(Door.MATRIX, entity, live, inbound, route, event=event, replay=replay))
