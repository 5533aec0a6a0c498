"""Reactions: built-in handlers first (🛑 stops a streaming answer), then `reaction:received`."""

from __future__ import annotations

from mindroom.bots.ingress import IngressDrop, reaction_ingress
from mindroom.bots.runtime import Entity
from mindroom.hooks.context import ReactionReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_REACTION_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent

__all__ = ["STOP_REACTIONS", "handle_reaction_event"]

logger = get_logger(__name__)

STOP_REACTIONS = frozenset({"🛑", "⏹️", "⏹"})


async def handle_reaction_event(entity: Entity, event: MatrixEvent) -> None:
    """Handle one reaction as seen by `entity`; exactly one entity fires `reaction:received` for it."""
    runtime = entity.runtime
    live = runtime.live
    inbound = reaction_ingress(entity, live, event)
    if isinstance(inbound, IngressDrop):
        return
    target = await entity.client.get_event(event.room_id, inbound.target_event_id)
    target_sender = target.sender if target is not None else None
    own = target_sender == runtime.bot_user_ids.get(entity.name)
    owner_is_agent = target_sender in runtime.bot_user_ids.values()
    responsible = own or (entity.is_router and not owner_is_agent)
    if not responsible or not runtime.journal.claim(entity.name, event.event_id):
        return
    if inbound.key in STOP_REACTIONS and own and entity.request_stop(inbound.target_event_id):
        logger.info("stop requested by reaction", agent=entity.name, target=inbound.target_event_id)
    ctx = ReactionReceivedContext(
        room_id=event.room_id,
        thread_id=target.thread_root if target is not None else None,
        reaction_key=inbound.key,
        target_event_id=inbound.target_event_id,
        sender_id=event.sender,
        agent_name=entity.name,
        reaction_event_id=event.event_id,
        **entity.bindings(live).fields(),
    )
    await emit(live.registry, EVENT_REACTION_RECEIVED, ctx)
