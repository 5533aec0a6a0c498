"""What a started daemon is made of, and how the pipeline's handlers are put together from it.

`RunningDaemon` holds the capabilities the orchestrator built for one run. It stays with the composition
root (and the operators' views: metrics, the CLI, tests); no pipeline stage receives it. Each stage gets
only what it declares:

- `LiveCell` — the one reference a reload swaps (a turn reads it once, at its start)
- `Directory` — who is where: running entities, their user ids, configured and kept rooms
- `TurnStores` — the journal, the answers given, attachments, approvals
- `Traffic` — the router's choice and answer order between entities, the bot-to-bot window
- `RunClock` — when this run started
- `RecentMessages`, `SharedWork`, `EventMemo` — the recent messages hooks read, each event's media worked
  once, each message's mentions read once
- `RuntimePaths` — the data directory and the environment snapshot the model layer reads
- `TurnLog` — the last answers given, for operators (the dashboard)
- `TurnMind` — memories recalled before an answer and written after it, the knowledge bases' search tool
- `HandoffDesk` — agents asking each other for help within a turn (its tool, and the chains running now)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mindroom.bots.commands.table import CommandTable
from mindroom.bots.directory import Directory
from mindroom.bots.handoff import HandoffDesk
from mindroom.bots.ingress import Ingress
from mindroom.bots.media import MediaIntake
from mindroom.bots.members import MemberHandler
from mindroom.bots.pipeline_capabilities import RunClock, Traffic, TurnStores
from mindroom.bots.reactions import ReactionHandler
from mindroom.bots.recent import RecentMessages
from mindroom.bots.respond import Responder
from mindroom.bots.runtime import EventHandler, LiveCell, LiveState
from mindroom.bots.sharing import EventMemo, SharedWork
from mindroom.bots.turn import MessagePipeline
from mindroom.bots.turn_log import TurnLog
from mindroom.bots.turn_mind import TurnMind
from mindroom.constants import RuntimePaths
from mindroom.matrix import MatrixEventKind

__all__ = ["RunningDaemon", "event_handlers"]


@dataclass(frozen=True, slots=True)
class RunningDaemon:
    """The capabilities one run of the daemon was built from (only `cell.live` changes, on reload)."""

    cell: LiveCell
    directory: Directory
    stores: TurnStores
    paths: RuntimePaths
    clock: RunClock
    traffic: Traffic = field(default_factory=Traffic)
    recent: RecentMessages = field(default_factory=RecentMessages)
    media: SharedWork = field(default_factory=SharedWork)
    """Each event's attachment, downloaded and transcribed once for every entity that handles it."""
    readings: EventMemo = field(default_factory=EventMemo)
    """Each message's mentions, read once for every entity that sees it."""
    mind: TurnMind | None = None
    """What agents remember about people and the knowledge bases they search (None: neither)."""
    turns: TurnLog = field(default_factory=TurnLog)
    """The last answers given (Matrix and API alike), for operators."""
    handoffs: HandoffDesk = field(init=False)
    """Agents handing questions to each other within their turns (answered through `responder()`)."""

    def __post_init__(self) -> None:
        desk = HandoffDesk(self.cell, self.directory, self.traffic.bot_turns, self.responder)
        object.__setattr__(self, "handoffs", desk)  # frozen: set once, as the run is put together

    def responder(self) -> Responder:
        """The answer stages on this run's stores and paths (a Matrix turn's and an API turn's alike)."""
        return Responder(self.stores, self.paths, self.turns, self.mind, self.directory, self.handoffs)

    @property
    def live(self) -> LiveState:
        """The live state now (a turn reads it once, through the cell)."""
        return self.cell.live


def event_handlers(
    daemon: RunningDaemon, commands: CommandTable, *, router: bool
) -> dict[MatrixEventKind, EventHandler]:
    """The pipeline's handler per event kind for one bot, each given the capabilities it declares."""
    stores, directory = daemon.stores, daemon.directory
    ingress = Ingress(directory, stores, daemon.clock, daemon.traffic.bot_turns, daemon.readings)
    messages = MessagePipeline(
        cell=daemon.cell,
        ingress=ingress,
        media=MediaIntake(daemon.media, stores.attachments, daemon.paths.env_values),
        responder=daemon.responder(),
        journal=stores.journal,
        directory=directory,
        coordinator=daemon.traffic.coordinator,
        commands=commands,
        env=daemon.paths.env_values,
        handoffs=daemon.handoffs,
    )
    handlers: dict[MatrixEventKind, EventHandler] = {
        MatrixEventKind.MESSAGE: messages,
        MatrixEventKind.REACTION: ReactionHandler(daemon.cell, ingress, directory, stores),
    }
    if router:  # people joining and leaving are announced by the router alone
        handlers[MatrixEventKind.MEMBER] = MemberHandler(daemon.cell, daemon.clock, directory, stores.journal)
    return handlers
