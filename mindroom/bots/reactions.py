"""Reactions: built-in handlers first, then `reaction:received` for what they did not consume.

Built in: 🛑 stops a streaming answer; ✅ or ❌ on an approval card, in the card's room, from a person
authorized there (ingress checks that), allows or denies the tool call it asks about (5️⃣, 🔟 or 🕧 allow it
and the tool for a while, where the card offers that; ❌ on a decided card stops such a grant). Approval
answers are consumed: hooks never see them as `reaction:received`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mindroom.bots.approvals.desk import ALLOW_KEYS, DENY_KEYS
from mindroom.bots.approvals.timed_approvals import timed_seconds
from mindroom.bots.directory import Directory
from mindroom.bots.ingress import InboundReaction, Ingress, IngressDrop
from mindroom.bots.pipeline_capabilities import TurnStores
from mindroom.bots.runtime import Entity, LiveCell
from mindroom.hooks.context import ReactionReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_REACTION_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent
from mindroom.state.approvals import ApprovalStatus

__all__ = ["STOP_REACTIONS", "ReactionHandler"]

logger = get_logger(__name__)

STOP_REACTIONS = frozenset({"🛑", "⏹️", "⏹"})


@dataclass(frozen=True, slots=True)
class ReactionHandler:
    """The handler of reaction events: the live cell, ingress, who is where (whose message was reacted to),
    and the turn's stores (the journal takes each reaction once; approvals decide cards)."""

    cell: LiveCell
    ingress: Ingress
    directory: Directory
    stores: TurnStores

    async def __call__(self, entity: Entity, event: MatrixEvent, *, replay: bool = False) -> None:
        """Handle one reaction as seen by `entity`; exactly one entity fires `reaction:received` for it.

        Reactions are never pending in the journal, so there is nothing to `replay`.
        """
        live = self.cell.live
        inbound = self.ingress.reaction(entity, live, event)
        if isinstance(inbound, IngressDrop):
            return
        target = await entity.client.get_event(event.room_id, inbound.target_event_id)
        target_sender = target.sender if target is not None else None
        user_ids = self.directory.bot_user_ids
        own = target_sender == user_ids.get(entity.name)
        owner_is_agent = target_sender in user_ids.values()
        responsible = own or (entity.is_router and not owner_is_agent)
        if not responsible or not self.stores.journal.claim(entity.name, event.event_id):
            return
        if own and await self._approval_answer(entity, inbound):
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

    async def _approval_answer(self, entity: Entity, inbound: InboundReaction) -> bool:
        """✅ / ❌ on one of this agent's approval cards: decide it (if still pending); True when consumed."""
        desk, timed = self.stores.approvals, timed_seconds(inbound.key)
        allow, deny = inbound.key in ALLOW_KEYS or timed is not None, inbound.key in DENY_KEYS
        if desk is None or not (allow or deny):
            return False
        card = desk.card(inbound.target_event_id)
        if card is None or card.room_id != inbound.event.room_id:
            return False  # a card is answered only in its own room
        event = inbound.event
        if card.pending:
            status: ApprovalStatus = "approved" if allow else "denied"
            await desk.decide(
                entity.client, card, status, event.sender, at_ms=event.origin_server_ts, auto_approve_s=timed
            )
        elif deny:
            await desk.stop_grant(entity.client, card, event.sender)
        return True
