"""One message through the pipeline, in order. This module owns the order in which hooks fire:

ingress -> message:received -> commands -> routing -> respond
(respond: message:enrich -> generate -> message:before_response -> send -> message:after_response)

A turn reads the live state once, at its start, and runs on that one generation to its end.
"""

from __future__ import annotations

import asyncio
import hashlib

import structlog

from mindroom import ai
from mindroom.bots.commands import CommandTable, handle_command, is_command
from mindroom.bots.ingress import InboundMessage, IngressDrop, message_ingress
from mindroom.bots.media import prepare_media
from mindroom.bots.respond import Turn, respond
from mindroom.bots.routing import decide_route
from mindroom.bots.runtime import Entity, LiveState
from mindroom.hooks.context import HookBindings, MessageEnvelope, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_MESSAGE_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent

__all__ = ["ASSIGNMENT_TIMEOUT_S", "ORDERED_ANSWER_TIMEOUT_S", "handle_message_event", "stable_correlation_id"]

logger = get_logger(__name__)

ASSIGNMENT_TIMEOUT_S = 120.0
ORDERED_ANSWER_TIMEOUT_S = 600.0


async def handle_message_event(
    entity: Entity, event: MatrixEvent, commands: CommandTable, *, replay: bool = False
) -> None:
    """Run one message event through this entity's pipeline.

    `replay` re-runs a turn that a crash cut short: it is already claimed, and older than this run.
    """
    runtime = entity.runtime
    live = runtime.live  # the one generation this whole turn runs on
    inbound = message_ingress(entity, live, event, replay=replay)
    if isinstance(inbound, IngressDrop):
        return
    inbound = await prepare_media(entity, live, inbound, event)
    correlation_id = stable_correlation_id(event.event_id)
    try:
        with structlog.contextvars.bound_contextvars(
            agent=entity.name, room_id=event.room_id, correlation_id=correlation_id
        ):
            await _pipeline(entity, live, inbound, commands, correlation_id)
    except asyncio.CancelledError:
        # Cut short (shutdown past its grace): left pending, so the next start finishes the turn.
        raise
    except BaseException:
        runtime.journal.complete(entity.name, event.event_id)
        raise
    runtime.journal.complete(entity.name, event.event_id)


def stable_correlation_id(event_id: str) -> str:
    """The correlation id of one inbound event: unique to it, and the same when a crashed turn is replayed."""
    return hashlib.sha256(event_id.encode()).hexdigest()[:32]


async def _received(
    entity: Entity, live: LiveState, bindings: HookBindings, inbound: InboundMessage, correlation_id: str
) -> bool:
    """`message:received`; True when a hook suppressed the message.

    A message a hook dispatched from `message:received` skips the plugin that sent it, so a plugin
    reacting to messages cannot feed on its own.
    """
    envelope = inbound.envelope
    registry = live.registry
    from_received_hook = envelope.message_received_depth == 1 and inbound.hook_origin_event == EVENT_MESSAGE_RECEIVED
    skipped: frozenset[str] = frozenset()
    if from_received_hook and envelope.hook_source:
        skipped = frozenset({envelope.hook_source.split(":", 1)[0]})
        registry = registry.without_plugin(next(iter(skipped)))
    ctx = MessageReceivedContext(
        envelope=envelope, correlation_id=correlation_id, skip_plugin_names=skipped, **bindings.context_fields()
    )
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
    return ctx.suppress


async def _pipeline(
    entity: Entity, live: LiveState, inbound: InboundMessage, commands: CommandTable, correlation_id: str
) -> None:
    runtime = entity.runtime
    envelope = inbound.envelope
    event_id = envelope.source_event_id
    bindings = entity.bindings(live, turn=correlation_id)
    if await _received(entity, live, bindings, inbound, correlation_id):
        logger.debug("message suppressed by a hook", event_id=event_id)
        _release(entity, event_id)
        return
    if inbound.replaces is not None:  # an edited question: only the agent that answered it sees it here
        await respond(entity, live, envelope, Turn(correlation_id, bindings, replaces=inbound.replaces))
        return
    if is_command(envelope.body):
        if _answers_command(entity, live, envelope, commands):
            await handle_command(entity, live, envelope, commands)
        _release(entity, event_id)
        return
    decision = decide_route(envelope.mentioned_agents, runtime.agents_in_room(envelope.room_id, live.config))
    if entity.is_router:
        if decision is not None and decision.kind == "router":
            runtime.coordinator.assign(event_id, await _route_by_model(entity, live, envelope, decision.agents))
        return
    if decision is None or entity.name not in decision.agents:
        return
    try:
        if decision.kind == "router":
            if runtime.router_in_room(envelope.room_id):
                chosen = await runtime.coordinator.assignment(event_id, ASSIGNMENT_TIMEOUT_S)
            else:
                chosen = decision.agents[0]
            if chosen != entity.name:
                return
        elif decision.kind == "mentioned":
            earlier = decision.agents[: decision.agents.index(entity.name)]
            if earlier:
                await runtime.coordinator.wait_for(event_id, earlier, ORDERED_ANSWER_TIMEOUT_S)
        turn = Turn(correlation_id, bindings, hops=inbound.hops + 1, image_ids=inbound.image_ids)
        await respond(entity, live, envelope, turn)
    finally:
        runtime.coordinator.finish(event_id, entity.name)


def _answers_command(entity: Entity, live: LiveState, envelope: MessageEnvelope, commands: CommandTable) -> bool:
    """The router answers commands in its rooms; elsewhere the room's first agent, or each for some commands."""
    runtime = entity.runtime
    if runtime.router_in_room(envelope.room_id):
        return entity.is_router
    command = commands.get(envelope.body.lstrip()[1:].partition(" ")[0])
    if command is not None and command.every_agent:
        return True
    present = runtime.agents_in_room(envelope.room_id, live.config)
    return not present or present[0] == entity.name


def _release(entity: Entity, event_id: str) -> None:
    """The router tells the agents waiting for its choice that nobody answers this message."""
    if entity.is_router:
        entity.runtime.coordinator.assign(event_id, None)


async def _route_by_model(
    entity: Entity, live: LiveState, envelope: MessageEnvelope, candidates: tuple[str, ...]
) -> str:
    config = live.config
    roles = [(name, config.agents[name].role or config.agents[name].display_name) for name in candidates]
    model = config.models.get(config.router.model)
    chosen = None
    if model is not None:
        try:
            chosen = await ai.choose_agent(model, roles, envelope.body, env=entity.runtime.env)
        except Exception as exc:  # the router must always produce a decision
            logger.warning("router model failed; using the first agent", error=str(exc) or type(exc).__name__)
    if chosen not in candidates:
        chosen = candidates[0]
    logger.info("router chose agent", chosen=chosen, candidates=list(candidates))
    return chosen
