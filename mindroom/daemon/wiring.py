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
- `TurnRunner` — the one turn every door calls (the Matrix door per bot, with the chat commands; the HTTP
  app's `/v1` door and the hand-offs share the run's)

The HTTP app gets `ApiCapabilities`, through `DaemonApiView`: the run's live cell, who is where, the turn's
stores, the paths, the clock, the last turns and the one turn; never the whole `RunningDaemon`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

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
from mindroom.bots.turn import MessagePipeline, TurnRunner
from mindroom.bots.turn_log import TurnLog
from mindroom.bots.turn_mind import TurnMind
from mindroom.constants import RuntimePaths
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.matrix import MatrixEventKind

__all__ = ["ApiCapabilities", "DaemonApiView", "RunningDaemon", "event_handlers"]


@dataclass(frozen=True, slots=True)
class ApiCapabilities:
    """What the HTTP app may use of one run: the live cell, who is where, the turn's stores (approvals, where
    sessions are kept), the paths, when the run started, the last turns, and the one turn its `/v1` door calls."""

    cell: LiveCell
    directory: Directory
    stores: TurnStores
    paths: RuntimePaths
    clock: RunClock
    turns: TurnLog
    runner: TurnRunner

    @property
    def live(self) -> LiveState:
        """The live state now (a turn reads it once, at its start)."""
        return self.cell.live


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
    """Agents handing questions to each other within their turns (each answered in a turn of `runner`)."""
    runner: TurnRunner = field(init=False)
    """The one turn of the doors that run no chat command: the HTTP app's `/v1` and the hand-offs."""
    api: ApiCapabilities = field(init=False)
    """What the HTTP app may use of this run."""

    def __post_init__(self) -> None:
        # Frozen: each is set once, as the run is put together (the desk reaches the runner made after it).
        desk = HandoffDesk(self.cell, self.directory, self.traffic.bot_turns, self._runner)
        object.__setattr__(self, "handoffs", desk)
        object.__setattr__(self, "runner", self.turn_runner())
        api = ApiCapabilities(self.cell, self.directory, self.stores, self.paths, self.clock, self.turns, self.runner)
        object.__setattr__(self, "api", api)

    def _runner(self) -> TurnRunner:
        return self.runner

    def responder(self) -> Responder:
        """The answer stages on this run's stores and paths (a Matrix turn's and an API turn's alike)."""
        return Responder(self.stores, self.paths, self.turns, self.mind, self.directory, self.handoffs)

    def turn_runner(self, commands: CommandTable | None = None) -> TurnRunner:
        """The one turn on this run's capabilities; `commands`: the chat commands a Matrix door runs."""
        return TurnRunner(
            journal=self.stores.journal,
            media=MediaIntake(self.media, self.stores.attachments, self.paths.env_values),
            responder=self.responder(),
            directory=self.directory,
            coordinator=self.traffic.coordinator,
            env=self.paths.env_values,
            readings=self.readings,
            commands=commands,
            handoffs=self.handoffs,
        )

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
    messages = MessagePipeline(daemon.cell, ingress, daemon.turn_runner(commands))
    handlers: dict[MatrixEventKind, EventHandler] = {
        MatrixEventKind.MESSAGE: messages,
        MatrixEventKind.REACTION: ReactionHandler(daemon.cell, ingress, directory, stores),
    }
    if router:  # people joining and leaving are announced by the router alone
        handlers[MatrixEventKind.MEMBER] = MemberHandler(daemon.cell, daemon.clock, directory, stores.journal)
    return handlers


class _Daemon(Protocol):
    """The daemon as its composition root holds it (`mindroom.daemon.orchestrator.Orchestrator` is one)."""

    @property
    def running(self) -> RunningDaemon | None:
        """What the current run is made of (None while starting or stopped)."""

    @property
    def reloader(self) -> ReloadCoordinator | None:
        """The reload coordinator of the current run."""

    @property
    def config_path(self) -> Path:
        """The config file the daemon runs."""


class DaemonApiView:
    """The daemon as the HTTP app sees it (`mindroom.api.app_context.DaemonView`): the current run's
    `ApiCapabilities` (None while it starts or is stopped), its reload coordinator, and its config file."""

    __slots__ = ("_daemon",)

    def __init__(self, daemon: _Daemon) -> None:
        self._daemon = daemon

    @property
    def running(self) -> ApiCapabilities | None:
        """What the HTTP app may use of the current run."""
        running = self._daemon.running
        return running.api if running is not None else None

    @property
    def reloader(self) -> ReloadCoordinator | None:
        """The reload coordinator of the current run."""
        return self._daemon.reloader

    @property
    def config_path(self) -> Path:
        """The config file the daemon runs."""
        return self._daemon.config_path
