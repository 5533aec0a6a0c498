"""One message through the pipeline, in order. This module owns the order in which hooks fire:

ingress -> claim -> message:received -> commands -> routing -> respond
(respond: message:enrich -> generate -> message:before_response -> send -> message:after_response)

A turn reads the live state once, at its start, and runs on that one generation to its end. The claim
is a context manager (`claimed_turn`): whatever way the turn ends, it is completed, unless shutdown
cancelled it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field

import structlog

from mindroom import ai
from mindroom.bots.channel import Turn
from mindroom.bots.commands.table import CommandTable, handle_command, is_command
from mindroom.bots.coordination import TurnCoordinator
from mindroom.bots.directory import Directory
from mindroom.bots.edits import EditBursts, EditWatch
from mindroom.bots.handoff import HandoffDesk
from mindroom.bots.ingress import InboundMessage, Ingress, IngressDrop
from mindroom.bots.lifecycle import claimed_turn, stable_correlation_id
from mindroom.bots.media import MediaIntake
from mindroom.bots.respond import Responder
from mindroom.bots.routing import RouteDecision, decide_route
from mindroom.bots.runtime import HANDLED, Entity, LiveCell, LiveState
from mindroom.hooks.context import HookBindings, MessageEnvelope, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.trace import hook_trace
from mindroom.hooks.types import EVENT_MESSAGE_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent
from mindroom.state.journal import TurnJournal

__all__ = ["ASSIGNMENT_TIMEOUT_S", "ORDERED_ANSWER_TIMEOUT_S", "MessagePipeline", "stable_correlation_id"]

logger = get_logger(__name__)

ASSIGNMENT_TIMEOUT_S = 120.0
ORDERED_ANSWER_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class _Route:
    """Whether the entity may act on the message (answer, route, run a command) or only observe it."""

    acts: bool
    command: bool = False
    decision: RouteDecision | None = None


@dataclass(frozen=True, slots=True)
class MessagePipeline:
    """The handler of message events: the live cell it reads once per turn, the stages it runs (ingress,
    media, the answer), the journal that holds its claim, who is where, the coordination between
    entities, the command table, the environment the router's model reads, and the edits being answered."""

    cell: LiveCell
    ingress: Ingress
    media: MediaIntake
    responder: Responder
    journal: TurnJournal
    directory: Directory
    coordinator: TurnCoordinator
    commands: CommandTable
    env: Mapping[str, str]
    edits: EditBursts = field(default_factory=EditBursts)
    """The newest edit of each question being answered again (a burst of edits is answered once more)."""
    handoffs: HandoffDesk | None = None
    """Where a running turn's chain of bot answers is known to the hand-offs it makes (None: none are made)."""

    def __call__(self, entity: Entity, event: MatrixEvent, *, replay: bool = False) -> Awaitable[None]:
        """Run one message event through this entity's pipeline.

        Ingress runs at once: a message dropped there returns `HANDLED` and costs no task. `replay` re-runs a
        turn that a crash cut short: it is already claimed, and older than this run.
        """
        live = self.cell.live  # the one generation this whole turn runs on
        inbound = self.ingress.message(entity, live, event, replay=replay)
        if isinstance(inbound, IngressDrop):
            return HANDLED
        route = self._route(entity, live, inbound)
        if not route.acts and not replay:
            if not live.registry.matching(EVENT_MESSAGE_RECEIVED, entity.name, event.room_id):
                return HANDLED  # another entity answers, and no hook here observes it: nothing to do or keep
            return self._observe(entity, live, inbound, event)
        return self._turn(entity, live, inbound, event, replay, route)

    async def _observe(self, entity: Entity, live: LiveState, inbound: InboundMessage, event: MatrixEvent) -> None:
        """The turn of an entity that only observes the message (another answers it): `message:received`, once.

        Its claim is for dedup alone (no content kept, nothing to complete or to finish after a crash), and it
        has no answer, edit or trace to follow: most entities of a busy room take this path for most messages.
        """
        if not self.journal.claim(entity.name, event.event_id):
            return
        inbound = await self.media.prepare(entity, live, inbound, event)  # a voice message is heard as text
        correlation_id = stable_correlation_id(event.event_id)
        with structlog.contextvars.bound_contextvars(
            agent=entity.name, room_id=event.room_id, correlation_id=correlation_id
        ):
            await self._received(live, entity.bindings(live, turn=correlation_id), inbound, correlation_id)

    def _route(self, entity: Entity, live: LiveState, inbound: InboundMessage) -> _Route:
        """What this entity may do with the message after `message:received` (decided before the claim)."""
        envelope = inbound.envelope
        if inbound.replaces is not None:
            return _Route(acts=True)
        if is_command(envelope.body):
            return _Route(acts=True, command=True)
        decision = decide_route(envelope.mentioned_agents, self._present(live, envelope))
        chooses = entity.is_router and decision is not None and decision.kind == "router"
        acts = chooses or (decision is not None and entity.name in decision.agents)
        return _Route(acts=acts, decision=decision)

    async def _turn(
        self, entity: Entity, live: LiveState, inbound: InboundMessage, event: MatrixEvent, replay: bool, route: _Route
    ) -> None:
        # A replayed turn of an entity that now only observes the message is completed like any other.
        with claimed_turn(self.journal, entity.name, event, replay=replay) as claimed:
            if not claimed:
                logger.debug(
                    "event dropped at ingress",
                    agent=entity.name,
                    event_id=event.event_id,
                    sender=event.sender,
                    reason="already handled",
                )
                return
            question = inbound.replaces.source_event_id if inbound.replaces is not None else None
            # Registered before the first await, so the edits of one question count in the order they came.
            with self.edits.arrived(entity.name, question, event.event_id) as edit:
                inbound = await self.media.prepare(entity, live, inbound, event)
                correlation_id = stable_correlation_id(event.event_id)
                with (
                    structlog.contextvars.bound_contextvars(
                        agent=entity.name, room_id=event.room_id, correlation_id=correlation_id
                    ),
                    hook_trace(),  # the turn's hooks from `message:received` on (noted with its answer)
                ):
                    await self._pipeline(entity, live, inbound, correlation_id, edit, route)

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
        self,
        entity: Entity,
        live: LiveState,
        inbound: InboundMessage,
        correlation_id: str,
        edit: EditWatch | None,
        route: _Route,
    ) -> None:
        envelope = inbound.envelope
        event_id = envelope.source_event_id
        bindings = entity.bindings(live, turn=correlation_id)
        if await self._received(live, bindings, inbound, correlation_id):
            logger.debug("message suppressed by a hook", event_id=event_id)
            self._release(entity, event_id)
            return
        if inbound.replaces is not None:  # an edited question: only the agent that answered it sees it here
            again = Turn(correlation_id, bindings, replaces=inbound.replaces, edit=edit)
            await self.responder.respond(entity, live, envelope, again)
            return
        if route.command:
            if self._answers_command(entity, live, envelope):
                await handle_command(entity, live, envelope, self.commands)
            self._release(entity, event_id)
            return
        decision = route.decision
        coordinator = self.coordinator
        if entity.is_router:
            if decision is not None and decision.kind == "router":
                coordinator.assign(event_id, await self._route_by_model(live, envelope, decision.agents))
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
            answer = Turn(correlation_id, bindings, hops=inbound.hops + 1, image_ids=inbound.image_ids)
            with self.handoffs.turn(correlation_id, answer.hops) if self.handoffs else contextlib.nullcontext():
                await self.responder.respond(entity, live, envelope, answer)
        finally:
            coordinator.finish(event_id, entity.name)

    def _answers_command(self, entity: Entity, live: LiveState, envelope: MessageEnvelope) -> bool:
        """The router answers commands in its rooms; elsewhere the room's first agent, or each for some commands."""
        if self.directory.router_in_room(envelope.room_id):
            return entity.is_router
        command = self.commands.get(envelope.body.lstrip()[1:].partition(" ")[0])
        if command is not None and command.every_agent:
            return True
        present = self._present(live, envelope)
        return not present or present[0] == entity.name

    def _present(self, live: LiveState, envelope: MessageEnvelope) -> tuple[str, ...]:
        """The agents in the message's room, read once per message for every entity of the run."""
        room_id = envelope.room_id
        return self.ingress.readings.once(
            (envelope.source_event_id, "present"), live, lambda: self.directory.agents_in_room(room_id, live.config)
        )

    def _release(self, entity: Entity, event_id: str) -> None:
        """The router tells the agents waiting for its choice that nobody answers this message."""
        if entity.is_router:
            self.coordinator.assign(event_id, None)

    async def _route_by_model(self, live: LiveState, envelope: MessageEnvelope, candidates: tuple[str, ...]) -> str:
        config = live.config
        entities = config.responders()
        roles = [(name, entities[name].role or entities[name].display_name) for name in candidates]
        keys = self.directory.room_keys(envelope.room_id)
        thread = envelope.resolved_thread_id
        own = config.router.model
        model = config.models.get(
            live.settings.model_name(config.models, config.room_models, own, envelope.room_id, thread, keys)
        )
        chosen = None
        if model is not None:
            try:
                chosen = await ai.choose_agent(model, roles, envelope.body, env=self.env)
            except Exception as exc:  # the router must always produce a decision
                logger.warning("router model failed; using the first agent", error=str(exc) or type(exc).__name__)
        if chosen not in candidates:
            chosen = candidates[0]
        logger.info("router chose agent", chosen=chosen, candidates=list(candidates))
        return chosen
