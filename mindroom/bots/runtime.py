"""What every bot shares: the live state (one frozen value, swapped whole), the journal, rooms, and `Entity`.

`LiveState` is one generation of what a reload replaces. `DaemonRuntime.live` is the only reference a
reload swaps, so a turn that reads it once at its start sees one config, one hook registry and one
tool catalogue throughout, however long it waits for its slot.

`Entity` is what the pipeline needs of a bot. The pipeline modules type against it, so none of them
imports the bot class (the orchestrator injects the pipeline's handlers into each bot).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindroom.bots.approvals import ApprovalDesk
from mindroom.bots.authorization import room_keys_for
from mindroom.bots.coordination import TurnCoordinator
from mindroom.bots.limits import SlidingWindow
from mindroom.bots.recent import RecentMessages
from mindroom.bots.sharing import SharedWork
from mindroom.config.main import Config
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.hooks.context import HookBindings
from mindroom.hooks.registry import HookRegistry
from mindroom.matrix import MatrixBotClient
from mindroom.plugins.loader import Plugin
from mindroom.plugins.skills import SkillCatalog
from mindroom.state.answers import AnswerLog
from mindroom.state.attachments import AttachmentStore
from mindroom.state.journal import TurnJournal
from mindroom.state.rooms import RoomMemory
from mindroom.tool_system.catalog import ToolCatalog

__all__ = [
    "BOT_TURNS_PER_THREAD",
    "BOT_TURN_WINDOW_S",
    "INTERRUPTED_NOTE",
    "STOPPED_NOTE",
    "BotMetrics",
    "DaemonRuntime",
    "Entity",
    "LiveState",
    "StreamState",
]

STOPPED_NOTE = "(stopped)"
INTERRUPTED_NOTE = "(interrupted: the agent is shutting down)"
BOT_TURNS_PER_THREAD = 10
BOT_TURN_WINDOW_S = 60.0


@dataclass(frozen=True, slots=True, eq=False)
class LiveState:
    """One generation of the daemon's live state: config, the plugins loaded for it, their hook registry,
    the tool catalogue and the skills. Built whole by `mindroom.daemon.live.build_live_state`."""

    config: Config
    registry: HookRegistry
    plugins: tuple[Plugin, ...] = ()
    tools: ToolCatalog = field(default_factory=ToolCatalog.builtin)
    skills: SkillCatalog = field(default_factory=SkillCatalog)
    plugin_digests: Mapping[str, str] = field(default_factory=dict)

    @property
    def display_names(self) -> dict[str, str]:
        """Agent name -> display name."""
        return {name: agent.display_name for name, agent in self.config.agents.items()}


@dataclass(slots=True)
class StreamState:
    """A streaming answer in flight: its Matrix event id, and whether (and why) a stop was asked for."""

    event_id: str | None = None
    stop_requested: bool = False
    stop_note: str = STOPPED_NOTE
    stopped: asyncio.Event = field(default_factory=asyncio.Event)

    def stop(self, note: str) -> None:
        """End the answer now; its text keeps what arrived so far, followed by `note`."""
        if not self.stop_requested:
            self.stop_requested = True
            self.stop_note = note
        self.stopped.set()


@dataclass(slots=True)
class BotMetrics:
    """Counters one bot keeps for operators."""

    messages_handled: int = 0
    answers: int = 0
    answer_latency_s: deque[float] = field(default_factory=lambda: deque(maxlen=1024))

    def record_answer(self, seconds: float) -> None:
        """Count one answer and its latency."""
        self.answers += 1
        self.answer_latency_s.append(seconds)


class Entity(Protocol):
    """One Matrix account as the pipeline sees it: an agent or the router."""

    @property
    def name(self) -> str:
        """The agent's name in config, or `router`."""

    @property
    def is_router(self) -> bool:
        """True for the router."""

    @property
    def runtime(self) -> DaemonRuntime:
        """The services every bot shares."""

    @property
    def client(self) -> MatrixBotClient:
        """This account's Matrix client."""

    @property
    def metrics(self) -> BotMetrics:
        """This account's counters."""

    @property
    def joined_rooms(self) -> set[str]:
        """Rooms this account is in."""

    def bindings(self, live: LiveState, turn: str | None = None) -> HookBindings:
        """The hook capabilities of this account under `live`; `turn` gives its hook messages stable ids."""

    def turn_slot(self, room_id: str, thread_key: str) -> AbstractAsyncContextManager[None]:
        """One turn at a time per thread, a bounded number per agent, rooms served fairly."""

    def track_stream(self) -> AbstractContextManager[StreamState]:
        """Register a streaming answer so a stop reaction can reach it."""

    def request_stop(self, response_event_id: str) -> bool:
        """Stop the streaming answer shown as `response_event_id`; True if one was found."""

    def tools(self, live: LiveState) -> tuple[Any, ...]:
        """The tools this agent may use under `live`, as the model layer takes them."""

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """Run `work` as a task this account owns (cancelled on stop); its errors are logged."""

    async def leave(self, room_id: str) -> None:
        """Leave a room."""

    @property
    def in_flight(self) -> int:
        """Events being handled right now."""


@dataclass(slots=True, eq=False)
class DaemonRuntime:
    """The one mutable holder of what is live: a reload replaces `live` (one reference), nothing else."""

    live: LiveState
    runtime_paths: RuntimePaths
    env: Mapping[str, str]
    server_name: str
    journal: TurnJournal
    room_memory: RoomMemory
    answers: AnswerLog
    attachments: AttachmentStore
    coordinator: TurnCoordinator = field(default_factory=TurnCoordinator)
    bots: Mapping[str, Entity] = field(default_factory=dict)
    """Every running entity by name (filled and changed by the orchestrator only)."""
    bot_user_ids: dict[str, str] = field(default_factory=dict)
    room_ids: dict[str, str] = field(default_factory=dict)
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    recent: RecentMessages = field(default_factory=RecentMessages)
    """The last messages of each conversation, for hooks' snapshot reads."""
    media: SharedWork = field(default_factory=SharedWork)
    """Each event's attachment, downloaded and transcribed once for every entity that handles it."""
    bot_turns: SlidingWindow = field(default_factory=lambda: SlidingWindow(BOT_TURNS_PER_THREAD, BOT_TURN_WINDOW_S))
    """Turns started by other bots' messages, per entity and thread (two bots cannot talk without end)."""
    approvals: ApprovalDesk | None = None
    """Tool-call approvals asked on cards (None: gates that ask a person are denied)."""
    session_url: str | None = None
    """The state's PostgreSQL database, where agents' sessions live too; None: SQLite files under the data dir."""

    @property
    def agent_user_ids(self) -> dict[str, str]:
        """Agent name -> Matrix user id (the router excluded)."""
        return {name: user for name, user in self.bot_user_ids.items() if name != ROUTER_AGENT_NAME}

    def room_keys(self, room_id: str) -> set[str]:
        """Every name config may give this room: its id, the config keys naming it, and their aliases."""
        keys = [key for key, rid in self.room_ids.items() if rid == room_id]
        aliases = [key if key.startswith("#") else f"#{key}:{self.server_name}" for key in keys]
        return room_keys_for(room_id, aliases, self.server_name) | set(keys)

    def is_managed(self, room_id: str) -> bool:
        """True for a room the daemon manages (named in config), not one an agent was only invited into."""
        return room_id in self.room_ids.values()

    def agents_in_room(self, room_id: str, config: Config) -> tuple[str, ...]:
        """Agents of this room in config order: configured for it, or invited into it (running bots only)."""
        keys = self.room_keys(room_id)
        return tuple(
            name
            for name, agent in config.agents.items()
            if name in self.bots
            and (any(room in keys for room in agent.rooms) or room_id in self.bots[name].joined_rooms)
        )

    def router_in_room(self, room_id: str) -> bool:
        """True when the router manages this room (it joins every configured room)."""
        return self.is_managed(room_id) and ROUTER_AGENT_NAME in self.bots
