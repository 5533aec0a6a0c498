"""Reactions: built-in handlers first (🛑 stops a streaming answer), then `reaction:received`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindroom.bots.authorization import is_authorized
from mindroom.hooks.context import ReactionReceivedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_REACTION_RECEIVED
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.bots.bot import EntityBot
    from mindroom.matrix import MatrixEvent

__all__ = ["STOP_REACTIONS", "handle_reaction_event"]

logger = get_logger(__name__)

STOP_REACTIONS = frozenset({"🛑", "⏹️", "⏹"})
_CLOCK_SKEW_MS = 2000


async def handle_reaction_event(bot: EntityBot, event: MatrixEvent) -> None:
    """Handle one reaction as seen by `bot`; exactly one entity fires `reaction:received` for it."""
    runtime = bot.runtime
    if event.origin_server_ts < runtime.started_at_ms - _CLOCK_SKEW_MS:
        return
    if event.sender in runtime.bot_user_ids.values():
        return
    target_event_id = event.related_event_id
    key = event.reaction_key
    if not target_event_id or not key:
        return
    if not is_authorized(
        runtime.config, event.sender, runtime.room_keys(event.room_id), bot_user_ids=runtime.bot_user_ids.values()
    ):
        return
    target = await bot.client.get_event(event.room_id, target_event_id)
    target_sender = target.sender if target is not None else None
    own = target_sender == runtime.bot_user_ids.get(bot.name)
    owner_is_agent = target_sender in runtime.bot_user_ids.values()
    responsible = own or (bot.is_router and not owner_is_agent)
    if not responsible or not runtime.state.claim(bot.name, event.event_id):
        return
    if key in STOP_REACTIONS and own and bot.request_stop(target_event_id):
        logger.info("stop requested by reaction", bot=bot.name, target=target_event_id)
    ctx = ReactionReceivedContext(
        room_id=event.room_id,
        thread_id=target.thread_root if target is not None else None,
        reaction_key=key,
        target_event_id=target_event_id,
        sender_id=event.sender,
        agent_name=bot.name,
        reaction_event_id=event.event_id,
        **bot.hook_bindings(),
    )
    await emit(runtime.registry, EVENT_REACTION_RECEIVED, ctx)
