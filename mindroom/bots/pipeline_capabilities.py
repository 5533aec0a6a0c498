"""Small capabilities the composition root hands the pipeline: the run's clock, the turn's stores, the traffic.

Each is a frozen value over objects with their own state; a stage declares the ones it reads (see
`mindroom.daemon.wiring`). Who is where is `mindroom.bots.directory.Directory`; what is live is
`mindroom.bots.runtime.LiveCell`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.coordination import TurnCoordinator
from mindroom.bots.limits import SlidingWindow
from mindroom.bots.thread_summaries import ThreadSummaries
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.state.answers import AnswerLog
from mindroom.state.attachments import AttachmentStore
from mindroom.state.journal import TurnJournal

__all__ = ["BOT_TURNS_PER_THREAD", "BOT_TURN_WINDOW_S", "RunClock", "Traffic", "TurnStores"]

BOT_TURNS_PER_THREAD = 10
BOT_TURN_WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class RunClock:
    """When this run started (ms since the epoch): events from before it are history, not news."""

    started_at_ms: int

    @classmethod
    def starting(cls, since_s: float | None = None) -> RunClock:
        """A run starting now, or continuing the run that started at `since_s` (a standby's takeover)."""
        return cls(int((time.time() if since_s is None else since_s) * 1000))


@dataclass(frozen=True, slots=True)
class TurnStores:
    """What a turn records: the journal (claims, open answers), the answers given, attachments, approvals,
    and where the agents' sessions are kept.

    `approvals` is None where no person can be asked: gates that ask are then denied.
    """

    journal: TurnJournal
    answers: AnswerLog
    attachments: AttachmentStore
    approvals: ApprovalDesk | None = None
    session_url: str | None = None
    """The state's PostgreSQL database, where agents' sessions live too; None: SQLite files under the data dir."""
    usage: UsageLedger | None = None
    """What each turn spent (and budgets read); None: not recorded."""
    summaries: ThreadSummaries = field(default_factory=ThreadSummaries)
    """Thread summaries written after answers (idle until the run attaches it)."""


@dataclass(frozen=True, slots=True)
class Traffic:
    """What spans entities' turns of one message: the router's choice and answer order, and bot-to-bot limits."""

    coordinator: TurnCoordinator = field(default_factory=TurnCoordinator)
    bot_turns: SlidingWindow = field(default_factory=lambda: SlidingWindow(BOT_TURNS_PER_THREAD, BOT_TURN_WINDOW_S))
    """Turns started by other bots' messages, per entity and thread (two bots cannot talk without end)."""
