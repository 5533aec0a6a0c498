"""The pipeline's shared types: the live state and its cell, `Entity`, and the handler the orchestrator injects.

`LiveState` is one generation of what a reload replaces. `LiveCell.live` is the only reference a reload
swaps, so a turn that reads it once at its start sees one config, one hook registry and one tool
catalogue throughout, however long it waits for its slot.

`Entity` is what the pipeline needs of a bot. The pipeline modules type against it, so none of them
imports the bot class (the orchestrator injects the pipeline's handlers into each bot). It carries no
holder of the daemon's services: each stage is handed the capabilities it declares by the orchestrator.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Generator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindroom.bots.bot_client import BotClient
from mindroom.config.main import Config
from mindroom.config.overrides import ChatSettings
from mindroom.errors import PluginError
from mindroom.hooks.context import HookBindings
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.transport import ResponseUsage
from mindroom.matrix import MatrixEvent
from mindroom.plugins.loader import Plugin
from mindroom.plugins.skills import SkillCatalog
from mindroom.tool_system.catalog import ToolCatalog

__all__ = [
    "HANDLED",
    "INTERRUPTED_NOTE",
    "STOPPED_NOTE",
    "BotMetrics",
    "Entity",
    "EventHandler",
    "LiveCell",
    "LiveState",
    "StreamState",
]

STOPPED_NOTE = "(stopped)"
INTERRUPTED_NOTE = "(interrupted: the agent is shutting down)"


@dataclass(frozen=True, slots=True, eq=False)
class LiveState:
    """One generation of the daemon's live state: config, the plugins loaded for it, their hook registry,
    the tool catalogue, the skills and the settings changed from chat. Built whole by
    `mindroom.daemon.live.build_live_state` (a change of room or thread settings replaces `settings` alone)."""

    config: Config
    registry: HookRegistry
    plugins: tuple[Plugin, ...] = ()
    tools: ToolCatalog = field(default_factory=ToolCatalog.builtin)
    skills: SkillCatalog = field(default_factory=SkillCatalog)
    plugin_digests: Mapping[str, str] = field(default_factory=dict)
    plugin_errors: tuple[PluginError, ...] = ()
    """Plugins config names that failed to load and were left out (only at start: a reload with one fails)."""
    settings: ChatSettings = field(default_factory=ChatSettings)
    """The settings changed from chat (its `config` overrides are already in `config`)."""

    def thread_mode(self, entity: str, room_id: str, room_keys: Iterable[str]) -> str:
        """How `entity` answers in this room: `room` or `thread`, as set from chat for the room, else as config says."""
        return self.settings.thread_mode(room_id) or self.config.thread_mode(entity, room_keys)

    @property
    def display_names(self) -> dict[str, str]:
        """Agent or team name -> display name."""
        return {name: entity.display_name for name, entity in self.config.responders().items()}


class LiveCell:
    """The one mutable holder of what is live: a reload replaces `live` (one reference), nothing else."""

    __slots__ = ("live",)

    def __init__(self, live: LiveState) -> None:
        self.live = live

    def swap(self, new: LiveState) -> LiveState:
        """Make `new` the live state in one assignment; returns the state it replaced."""
        old, self.live = self.live, new
        return old


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
    tokens: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Model id -> (input, output, cached) tokens its turns spent, since the bot started."""

    def record_answer(self, seconds: float) -> None:
        """Count one answer and its latency."""
        self.answers += 1
        self.answer_latency_s.append(seconds)

    def record_usage(self, usage: ResponseUsage) -> None:
        """Add one turn's token usage to its model's counts."""
        input_tokens, output_tokens, cached_tokens = self.tokens.get(usage.model, (0, 0, 0))
        self.tokens[usage.model] = (
            input_tokens + usage.input_tokens,
            output_tokens + usage.output_tokens,
            cached_tokens + usage.cached_tokens,
        )


class Entity(Protocol):
    """One Matrix account as the pipeline sees it: an agent or the router."""

    @property
    def name(self) -> str:
        """The agent's name in config, or `router`."""

    @property
    def is_router(self) -> bool:
        """True for the router."""

    @property
    def client(self) -> BotClient:
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

    def tools(self, live: LiveState, requester: str | None = None) -> tuple[Any, ...]:
        """The tools this agent may use under `live` (a private agent's: `requester`'s), as the model takes them."""

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """Run `work` as a task this account owns (cancelled on stop); its errors are logged."""

    async def leave(self, room_id: str) -> None:
        """Leave a room."""

    @property
    def in_flight(self) -> int:
        """Events being handled right now."""


class _Handled:
    """An awaitable with nothing left to run."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # a generator with no steps: awaiting it returns at once


HANDLED = _Handled()
"""What a handler returns when it dealt with the event as it was called (a bot then starts no task for it)."""


class EventHandler(Protocol):
    """What the orchestrator injects per event kind: run one event as seen by one entity.

    `replay` re-runs an event a crash cut short (already claimed, older than this run); recovery calls
    the same handlers the bots were given. A handler may decide at once that an event is not for its
    entity and return `HANDLED`: the bot then spends no task on it (every entity in a room sees every
    event; most of them drop most events).
    """

    def __call__(self, entity: Entity, event: MatrixEvent, /, *, replay: bool = False) -> Awaitable[None]:
        """Handle `event` for `entity`."""
