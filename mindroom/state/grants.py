"""Timed approvals kept across restarts: grants given on approval cards, and `!auto_approve` windows.

A grant lets one person's calls of one tool by one agent in one thread run without a card until it
expires or is revoked (`mindroom.tool_system.approval_grants` says what it covers). A window lets
every call that would ask one person in one conversation run without a card until it ends. Both are
judged by the wall clock (`time.time()`), which a restart does not reset. Expired windows are dropped
when the store opens; grants are kept 30 days past their end, so their card still finds them.
`sqlite.grants.SqliteGrantStore` keeps them in a file under the data directory,
`postgres.grants.PostgresGrantStore` in the state's database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Protocol

__all__ = [
    "GRANT_COLUMNS",
    "GRANT_RETENTION_S",
    "WINDOW_COLUMNS",
    "ApprovalGrant",
    "AutoApproveWindow",
    "GrantStore",
    "window_key",
]

GRANT_RETENTION_S = 30 * 24 * 3600
"""How long a grant is kept after it ended."""


@dataclass(frozen=True, slots=True)
class ApprovalGrant:
    """A card's timed approval: whose calls of which operation, by which agent, where, and until when."""

    grant_id: str
    room_id: str
    thread_id: str
    card_event_id: str
    requester_id: str
    agent: str
    tool_name: str
    operation: str
    """The tool bound to the config it was given under (`approval_grants.grant_operation`)."""
    created_at: float
    expires_at: float
    revoked_at: float | None

    def active(self, now: float) -> bool:
        """Neither expired nor revoked at `now`."""
        return self.revoked_at is None and now < self.expires_at


@dataclass(frozen=True, slots=True)
class AutoApproveWindow:
    """One person's `!auto_approve` window in one conversation (a thread, or with no thread the whole room)."""

    room_id: str
    thread_id: str | None
    requester_id: str
    set_at: float
    expires_at: float

    @property
    def key(self) -> str:
        """The window's identity (one window per person and conversation)."""
        return window_key(self.room_id, self.thread_id, self.requester_id)


def window_key(room_id: str, thread_id: str | None, requester_id: str) -> str:
    """The identity of a person's window in a conversation (one text, so both backends key it alike)."""
    return json.dumps([room_id, thread_id, requester_id], separators=(",", ":"))


GRANT_COLUMNS = ", ".join(f.name for f in fields(ApprovalGrant))
WINDOW_COLUMNS = "window_key, " + ", ".join(f.name for f in fields(AutoApproveWindow))
"""The tables' columns in order (the same in both backends)."""


class GrantStore(Protocol):
    """Grants by id, by card and by scope; windows by person and conversation."""

    def add_grant(self, grant: ApprovalGrant) -> None:
        """Keep a new grant."""

    def grant_for_card(self, card_event_id: str) -> ApprovalGrant | None:
        """The grant given on this card, if one was (in any state)."""

    def active_grant(
        self, room_id: str, thread_id: str, requester_id: str, agent: str, operation: str, now: float
    ) -> ApprovalGrant | None:
        """A grant covering this person's calls of `operation` by `agent` in this thread at `now`, if any."""

    def revoke_grant(self, grant_id: str, at: float) -> bool:
        """End a grant early; False when it had ended already (expired or revoked)."""

    def set_window(self, window: AutoApproveWindow) -> None:
        """Open a window, replacing the person's earlier one in that conversation."""

    def end_window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> bool:
        """Close the person's window in this conversation; False when none was open at `now`."""

    def window(self, room_id: str, thread_id: str | None, requester_id: str, now: float) -> AutoApproveWindow | None:
        """The person's window open at `now` in exactly this conversation, if any."""

    def room_windows(self, room_id: str, now: float) -> list[AutoApproveWindow]:
        """Every window open at `now` in the room, by thread then person."""

    def close(self) -> None:
        """Release what the store holds of its own (the backend closes shared connections)."""
