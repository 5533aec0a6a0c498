"""Room members: `room:member_joined` and `room:member_left`, fired by the router for people, never for bots
(the daemon's accounts, and the other bots config lists in `bot_accounts`).

Only the router fires them (it is in every room the daemon manages), once per membership event, and only
for events newer than this run: members present at startup are not announced. `classify_member_event` is
the pure part.

Delivery is at least once. The event is claimed in the journal as pending (with its content) before the
hooks run and completed after they return (`claimed_turn`); a crash in between leaves it pending, and the
next start delivers it again (`replay`). A completed event is never delivered again.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from mindroom.bots.directory import Directory
from mindroom.bots.ingress import IngressDrop, older_than_run
from mindroom.bots.lifecycle import claimed_turn
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.runtime import Entity, LiveCell
from mindroom.hooks.context import RoomMemberJoinedContext, RoomMemberLeftContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_ROOM_MEMBER_JOINED, EVENT_ROOM_MEMBER_LEFT
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent, MatrixEventKind
from mindroom.matrix.crypto.unreadable_notices import is_daemon_account
from mindroom.state.journal import TurnJournal

__all__ = ["MemberChange", "MemberHandler", "classify_member_event"]

logger = get_logger(__name__)

MemberChange = Literal["joined", "left"]


def classify_member_event(
    event: MatrixEvent,
    *,
    started_at_ms: int,
    bot_user_ids: Collection[str],
    server_name: str,
    account_prefix: str,
    replay: bool = False,
) -> MemberChange | IngressDrop:
    """Whether an `m.room.member` event is a person joining, a person leaving on their own, or neither.

    Bots are this daemon's running accounts (`bot_user_ids`) and every account with its prefix on its
    server (agents not running, or no longer configured). `replay` is an event a crash cut short: it is
    older than this run, and still due.
    """
    user_id = event.state_key
    if event.kind is not MatrixEventKind.MEMBER or not user_id:
        return IngressDrop("not a membership event")
    if user_id in bot_user_ids or is_daemon_account(user_id, server_name, account_prefix):
        return IngressDrop("a bot's membership")
    if not replay and older_than_run(event.origin_server_ts, started_at_ms):
        return IngressDrop("older than this run")
    membership, previous = event.membership, event.prev_membership
    if membership == "join":
        return IngressDrop("profile change") if previous == "join" else "joined"
    # A leave is announced with the name and avatar from before it, so its previous content must be there.
    if membership != "leave" or previous != "join" or event.prev_content is None:
        return IngressDrop("not a join or a leave")
    if event.sender != user_id:
        return IngressDrop("removed by someone else")
    return "left"


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class MemberHandler:
    """The handler of membership events (given to the router): the live cell, the run's clock, who is where
    (the daemon's own accounts), and the journal that holds each delivery's claim."""

    cell: LiveCell
    clock: RunClock
    directory: Directory
    journal: TurnJournal

    async def __call__(self, entity: Entity, event: MatrixEvent, *, replay: bool = False) -> None:
        """Fire `room:member_joined` or `room:member_left` for one membership event, if it is one (router only)."""
        if not entity.is_router:
            return
        live = self.cell.live
        change = classify_member_event(
            event,
            started_at_ms=self.clock.started_at_ms,
            bot_user_ids={*self.directory.bot_user_ids.values(), *live.config.bot_accounts},
            server_name=entity.client.server_name,
            account_prefix=entity.client.account_prefix,
            replay=replay,
        )
        if isinstance(change, IngressDrop):
            logger.debug("membership event ignored", agent=entity.name, event_id=event.event_id, reason=change.reason)
            event_name = None
        else:
            event_name = EVENT_ROOM_MEMBER_JOINED if change == "joined" else EVENT_ROOM_MEMBER_LEFT
        if event_name is None or not live.registry.has_hooks(event_name):
            if replay:  # nothing (any more) to deliver: the pending claim is done
                self.journal.complete(entity.name, event.event_id)
            return
        with claimed_turn(self.journal, entity.name, event, replay=replay) as claimed:
            if not claimed:
                return
            # A join carries the new name and avatar; a leave's content has none, so they come from before it.
            profile = event.content if change == "joined" else event.prev_content or {}
            context = RoomMemberJoinedContext if change == "joined" else RoomMemberLeftContext
            ctx = context(
                agent_name=entity.name,
                room_id=event.room_id,
                event_id=event.event_id,
                user_id=event.state_key or "",
                sender_id=event.sender,
                display_name=_str(profile.get("displayname")),
                avatar_url=_str(profile.get("avatar_url")),
                membership=event.membership or "",
                prev_membership=event.prev_membership,
                correlation_id=event.event_id,
                **entity.bindings(live).fields(),
            )
            logger.info(
                "room member changed", agent=entity.name, room_id=event.room_id, user_id=ctx.user_id, change=change
            )
            await emit(live.registry, event_name, ctx)
