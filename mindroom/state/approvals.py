"""Tool-call approvals: the card each one was asked on, and how it ended.

One record per approval id (derived from the turn, the asking hook, the tool and its arguments), so a
turn replayed after a crash finds its card instead of posting a second one. A pending approval changes
state once: `resolve` only moves it out of `pending`, so a reaction and a timeout cannot both win.
Decided ones are kept for 30 days. `sqlite.approvals.SqliteApprovalStore` keeps them in a file under
the data directory, `postgres.approvals.PostgresApprovalStore` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, Protocol

__all__ = ["COLUMNS", "RETENTION_S", "ApprovalRecord", "ApprovalStatus", "ApprovalStore"]

ApprovalStatus = Literal["pending", "approved", "denied", "expired"]

RETENTION_S = 30 * 24 * 3600
"""How long a decided approval is kept (a pending one is kept until it is decided or expires)."""


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One approval: who asks, where its card is, what it asks, and how (and by whom) it was decided."""

    approval_id: str
    agent: str
    room_id: str
    thread_root: str | None
    tool_name: str
    prompt: str
    question: str
    """The card's first line: who wants to run what, and why it asks (the same in every state)."""
    card_event_id: str | None
    status: ApprovalStatus
    decided_by: str | None
    reason: str | None
    created_at: float
    expires_at: float
    decided_at: float | None

    @property
    def pending(self) -> bool:
        """True until someone (or the clock) decided it."""
        return self.status == "pending"


COLUMNS = ", ".join(f.name for f in fields(ApprovalRecord))
"""The record's fields in order, as the table's columns (the same in both backends)."""


class ApprovalStore(Protocol):
    """Approvals by id and by card; a pending one is decided at most once."""

    def get(self, approval_id: str) -> ApprovalRecord | None:
        """The approval with this id, if it was ever asked."""

    def by_card(self, card_event_id: str) -> ApprovalRecord | None:
        """The approval asked on this Matrix event, if it is a card."""

    def open(self, record: ApprovalRecord) -> ApprovalRecord:
        """Store a new pending approval; when its id exists already (a replayed turn), return that one instead."""

    def set_card(self, approval_id: str, card_event_id: str) -> None:
        """The approval's card was posted as `card_event_id`."""

    def resolve(
        self, approval_id: str, status: ApprovalStatus, *, by: str | None = None, reason: str | None = None
    ) -> bool:
        """Decide a pending approval; False when it was no longer pending (someone else decided first)."""

    def overdue(self, now: float | None = None) -> list[ApprovalRecord]:
        """Pending approvals whose time is up, oldest first."""

    def close(self) -> None:
        """Release what the store holds of its own (the backend closes shared connections)."""
