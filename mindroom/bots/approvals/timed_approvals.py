"""Timed approvals on cards: the reactions that give them, what a card says about them, and their wire fields.

A card the `tool_approval` rules post in a thread, showing the call's arguments whole, offers its
requester to allow that tool for a while (`AUTO_APPROVE_OPTIONS`): reacting 5️⃣, 🔟 or 🕧 approves the
call and gives a grant of 5, 10 or 30 minutes; ❌ on the card afterwards stops the grant. In the card's
content (`com.mindroom.approval`) an offering card lists `auto_approve_options` (seconds), and once a
grant exists, `auto_approval` holds MindRoom's wire fields: `grant_id`, `expires_at`, `revoked_at`
(ISO-8601, UTC).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from mindroom.hooks.tool_contexts import ApprovalRequest
from mindroom.logging_config import get_logger
from mindroom.state.approvals import ApprovalRecord
from mindroom.state.grants import ApprovalGrant, AutoApproveWindow, GrantStore
from mindroom.tool_system.approval_grants import AUTO_APPROVE_OPTIONS, grant_operation
from mindroom.tool_system.approval_rules import APPROVAL_RULES_PLUGIN, arguments_shown_whole

__all__ = [
    "TIMED_ALLOW_KEYS",
    "TimedApprovals",
    "grant_note",
    "grant_wire",
    "offer_text",
    "timed_seconds",
    "until_text",
]

logger = get_logger(__name__)

TIMED_ALLOW_KEYS = dict(zip(("5️⃣", "🔟", "🕧"), AUTO_APPROVE_OPTIONS, strict=True))
"""Reactions that approve a call and the tool for that many seconds (🕧: half past, half an hour)."""
_BY_BARE_KEY = {key.replace("\ufe0f", ""): seconds for key, seconds in TIMED_ALLOW_KEYS.items()}


def timed_seconds(key: str) -> int | None:
    """How long a reaction key allows a tool for (None: not a timed approval), with or without the emoji
    variation selector clients may leave out."""
    return _BY_BARE_KEY.get(key.replace("\ufe0f", ""))


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat()


def until_text(moment: float) -> str:
    """A moment as people read it on a card or in a command's answer (UTC)."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")


def offer_text(tool: str) -> str:
    """What an offering card adds: how to allow the tool for a while instead of once."""
    keys = ", ".join(f"{key} {seconds // 60} min" for key, seconds in TIMED_ALLOW_KEYS.items())
    return f" To allow {tool} in this thread for a while, react {keys}."


def grant_note(grant: ApprovalGrant) -> str:
    """What a card says of the grant given on it."""
    if grant.revoked_at is not None:
        return f" Auto-approval of {grant.tool_name} stopped at {until_text(grant.revoked_at)}."
    return (
        f" {grant.tool_name} runs without asking in this thread for {grant.requester_id} until"
        f" {until_text(grant.expires_at)} (react ❌ here to stop that)."
    )


def grant_wire(grant: ApprovalGrant) -> dict[str, Any]:
    """The grant as MindRoom's card edit carries it."""
    return {"grant_id": grant.grant_id, "expires_at": _iso(grant.expires_at), "revoked_at": _iso(grant.revoked_at)}


class TimedApprovals:
    """The grants and windows an approval desk consults: kept in a `GrantStore`, judged by `clock` (the wall
    clock, so a restart changes nothing), bound to the live config (`config` returns it)."""

    def __init__(self, store: GrantStore, config: Callable[[], Any]) -> None:
        self.store = store
        self._config = config
        self.clock: Callable[[], float] = time.time

    def operation(self, tool_name: str) -> str:
        """What a grant for `tool_name` is bound to under the live config."""
        return grant_operation(self._config(), tool_name)

    def covered(self, room_id: str, thread_id: str | None, agent: str, request: ApprovalRequest) -> str | None:
        """What lets this call run without a card: the person's window in this conversation (or the whole
        room), or their grant for the tool (rules' cards only); None: nothing does."""
        person, now = request.requester_id, self.clock()
        if person is None:
            return None
        store = self.store
        if store.window(room_id, thread_id, person, now) or (thread_id and store.window(room_id, None, person, now)):
            return "auto-approve window"
        if request.plugin_name != APPROVAL_RULES_PLUGIN or thread_id is None:
            return None
        grant = store.active_grant(room_id, thread_id, person, agent, self.operation(request.tool_name), now)
        return f"grant {grant.grant_id}" if grant is not None else None

    def offer(self, thread_id: str | None, request: ApprovalRequest) -> str | None:
        """The operation a timed approval of this card binds (None: the card offers none). Offered on the
        rules' cards in a thread, to the person who asked, when the card shows every argument."""
        if request.plugin_name != APPROVAL_RULES_PLUGIN or not request.requester_id or thread_id is None:
            return None
        return self.operation(request.tool_name) if arguments_shown_whole(request.arguments) else None

    def give(self, card: ApprovalRecord, thread_id: str, by: str, seconds: int, offer: str) -> ApprovalGrant | None:
        """Keep the grant a timed approval of `card` gives; None when the config changed since it was posted."""
        operation = self.operation(card.tool_name)
        if operation != offer:
            logger.info("timed approval given once: the config changed since the card", approval=card.approval_id)
            return None
        now = self.clock()
        fields = (card.room_id, thread_id, card.card_event_id or "", by, card.agent, card.tool_name, operation)
        grant = ApprovalGrant(uuid.uuid4().hex, *fields, created_at=now, expires_at=now + seconds, revoked_at=None)
        self.store.add_grant(grant)
        logger.info("approval grant given", agent=card.agent, tool=card.tool_name, by=by, seconds=seconds)
        return grant

    def stop(self, card: ApprovalRecord, by: str) -> ApprovalGrant | None:
        """End the grant given on `card`, if it still runs and `by` is its person; returns it as it ended."""
        grant = self.store.grant_for_card(card.card_event_id) if card.card_event_id else None
        if grant is None or grant.requester_id != by or not self.store.revoke_grant(grant.grant_id, self.clock()):
            return None
        logger.info("approval grant stopped", agent=card.agent, tool=card.tool_name, by=by)
        return self.store.grant_for_card(grant.card_event_id)

    def open_window(self, room_id: str, thread_id: str | None, requester_id: str, seconds: int) -> AutoApproveWindow:
        """Start (or replace) the person's window in a conversation (a thread, or with None the whole room)."""
        now = self.clock()
        window = AutoApproveWindow(room_id, thread_id, requester_id, now, now + seconds)
        self.store.set_window(window)
        logger.info("auto-approve window opened", room_id=room_id, thread_id=thread_id, by=requester_id, s=seconds)
        return window

    def close_window(self, room_id: str, thread_id: str | None, requester_id: str) -> bool:
        """End the person's window in the conversation; False when none was open (grants are not touched)."""
        return self.store.end_window(room_id, thread_id, requester_id, self.clock())

    def window(self, room_id: str, thread_id: str | None, requester_id: str) -> AutoApproveWindow | None:
        """The person's open window in exactly this conversation, if any."""
        return self.store.window(room_id, thread_id, requester_id, self.clock())

    def room_windows(self, room_id: str) -> list[AutoApproveWindow]:
        """Every open window in the room."""
        return self.store.room_windows(room_id, self.clock())
