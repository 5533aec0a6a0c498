"""The daemon's parts the built-in tools reach, and who a tool call runs for.

The tools here are plain functions under MindRoom's names; what they act on (the schedules, the hand-offs,
the memory store, the agents' Matrix accounts, the settings changed from chat, the tool catalogue) belongs to
packages above this one. Each run of the daemon provides those parts for its data directory
(`provide_daemon_parts`) and withdraws them when it stops; a tool finds them through the data directory of
the turn that calls it, so two daemons in one process never reach each other's. Every part gets the caller
(`ToolCaller`: the agent, the conversation, the person the turn speaks for), read from the turn's bound
runtime context, never from the model's arguments.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

if TYPE_CHECKING:
    from mindroom.config.effective import EffectiveConfig
    from mindroom.config.voice import TextToSpeechConfig
    from mindroom.matrix.room_account import RoomAccount

__all__ = [
    "CompactionDesk",
    "DaemonParts",
    "HandoffAnswer",
    "HandoffPort",
    "MemoryDesk",
    "MemoryRecord",
    "RoomDesk",
    "ScheduleDesk",
    "SettingsPort",
    "ToolCaller",
    "ToolLookup",
    "UsageDesk",
    "daemon_parts",
    "provide_daemon_parts",
    "tool_caller",
    "tool_payload",
]


@dataclass(frozen=True, slots=True)
class ToolCaller:
    """Who a tool call runs for: the agent, its room and conversation thread, and the person the turn speaks for."""

    agent_name: str
    room_id: str
    thread_id: str | None
    requester_id: str
    session_id: str | None
    correlation_id: str | None
    config: Any


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One thing an agent remembers about a person, by id."""

    memory_id: str
    text: str


@dataclass(frozen=True, slots=True)
class HandoffAnswer:
    """How a hand-off went: the agent that answered and its answer; else why it was refused, or why the agent
    asked gave no answer."""

    agent_name: str | None
    text: str | None
    refusal: str | None = None
    failure: str | None = None


class ScheduleDesk(Protocol):
    """The daemon's schedules as one agent's own tasks in the caller's room (errors are `ToolError`s)."""

    async def schedule(self, caller: ToolCaller, request: str, *, new_thread: bool) -> str:
        """Store a task from a `!schedule`-style request; what was scheduled."""

    async def edit(self, caller: ToolCaller, task_id: str, request: str) -> str:
        """Replace a task's timing and message; what it is now."""

    async def listing(self, caller: ToolCaller) -> str:
        """The agent's pending tasks in the caller's room."""

    async def cancel(self, caller: ToolCaller, task_id: str) -> str:
        """Cancel one of the agent's tasks in the caller's room."""


class HandoffPort(Protocol):
    """Hand-offs between agents of one room (`mindroom.bots.handoff.HandoffDesk`)."""

    async def ask(self, asking: str, target: str, task: str) -> HandoffAnswer:
        """Have `target` answer `task` in the running turn's conversation, under `delegate_to`'s rules."""


class MemoryDesk(Protocol):
    """What one agent remembers about one person, by id (never another agent's or another person's)."""

    async def add(self, agent: str, user_id: str, text: str) -> MemoryRecord:
        """Store a memory."""

    async def search(self, agent: str, user_id: str, query: str, limit: int) -> list[MemoryRecord]:
        """The memories best matching `query`, best first."""

    async def listing(self, agent: str, user_id: str, limit: int) -> list[MemoryRecord]:
        """The memories, newest first."""

    async def get(self, agent: str, user_id: str, memory_id: str) -> MemoryRecord | None:
        """One memory, None when this scope has none with this id."""

    async def update(self, agent: str, user_id: str, memory_id: str, text: str) -> bool:
        """Rewrite one memory; False when this scope has none with this id."""

    async def delete(self, agent: str, user_id: str, memory_id: str) -> bool:
        """Delete one memory; False when this scope has none with this id."""


class CompactionDesk(Protocol):
    """Folding a conversation's stored history into a summary now."""

    async def compact(self, caller: ToolCaller) -> str:
        """Fold the caller's conversation; what was done."""


class SettingsPort(Protocol):
    """Config changes from chat (`!config`'s desk): checked against the chat allowlist and the whole config."""

    def administrator(self, caller: ToolCaller) -> bool:
        """Whether the person the caller's turn speaks for is one of `administrators` (a refusal is logged)."""

    async def change(self, caller: ToolCaller, key: str, value: Any, *, dry_run: bool = False) -> list[str]:
        """Check and (unless `dry_run`) keep and apply `key: value` for the caller; the problems when refused."""

    async def effective(self) -> EffectiveConfig:
        """The config in force, value by value with its source (`ConfigError` if config.yaml does not load)."""

    async def change_thread(self, caller: ToolCaller, key: str, value: Any) -> list[str]:
        """Set (`None`: reset) `key` for the caller's thread as `!model` does; the problems when refused."""

    def thread_setting(self, caller: ToolCaller, key: str) -> Any:
        """The value of `key` set from chat for the caller's thread, None when none is."""


class RoomDesk(Protocol):
    """The agents' Matrix accounts, within their rooms."""

    def client(self, agent: str) -> RoomAccount | None:
        """The running agent's account (None when it is not running)."""

    def joined(self, agent: str) -> Collection[str]:
        """The rooms the agent is in."""

    def room_id(self, room: str) -> str:
        """The id of a room named by its config key, alias or id (unchanged when unknown)."""

    def agents_in_room(self, room_id: str) -> tuple[str, ...]:
        """The agents and teams of the config that are in the room."""

    def user_ids(self) -> Mapping[str, str]:
        """The daemon's accounts: entity name -> Matrix user id."""

    def may_reach(self, user_id: str, room_id: str, entity: str) -> bool:
        """Whether the person may talk to `entity` in the room."""

    def stop_reply(self, entity: str, room_id: str, thread_id: str | None) -> str | None:
        """Stop `entity`'s answer streaming in the conversation; its event id, None when there is none."""

    async def send_event(self, agent: str, room_id: str, event_type: str, content: Mapping[str, Any]) -> str:
        """Send a room event as the agent, encrypted in an encrypted room (never plaintext there); its event id."""

    async def send_voice(
        self,
        agent: str,
        room_id: str,
        text: str,
        service: TextToSpeechConfig,
        env: Mapping[str, str],
        *,
        body: str,
        thread_root: str | None,
    ) -> tuple[str, int]:
        """Speak `text` with `service` and send it as the agent's voice message (its recording encrypted in an
        encrypted room); its event id and length in ms. `ToolError` when the speech or the sending fails."""


class ToolLookup(Protocol):
    """The live tool catalogue, for tools that run or describe other tools (`dynamic_tools`, `config_manager`)."""

    def specs(self, names: Sequence[str], env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The tools these `tools:` names give an agent with `env`, described (name, description, schema)."""

    def names(self) -> Mapping[str, tuple[str, ...]]:
        """Every tool name the catalogue knows, with the function names it gives (empty when only known once built)."""


class UsageDesk(Protocol):
    """What turns spent, as the `usage_stats` tool reports it (`mindroom.bots.usage.report.UsageSummaries`)."""

    async def summary(self, requester: str | None, *, include_daily: bool) -> dict[str, Any]:
        """One person's sums this month and today (None: everyone's, per person), with each day's when asked."""


@dataclass(frozen=True, slots=True)
class DaemonParts:
    """What one run of the daemon offers the built-in tools (None: this run has no such part)."""

    schedules: ScheduleDesk | None = None
    handoffs: HandoffPort | None = None
    memories: MemoryDesk | None = None
    compaction: CompactionDesk | None = None
    settings: SettingsPort | None = None
    rooms: RoomDesk | None = None
    tools: ToolLookup | None = None
    usage: UsageDesk | None = None


_lock = threading.Lock()
_provided: dict[Path, DaemonParts] = {}


def provide_daemon_parts(storage_root: Path, parts: DaemonParts) -> Callable[[], None]:
    """Offer `parts` to tools of turns on `storage_root`; returns how to withdraw them (when the run stops)."""
    key = Path(storage_root).resolve()
    with _lock:
        _provided[key] = parts

    def withdraw() -> None:
        with _lock:
            if _provided.get(key) is parts:  # a later run on the same data keeps its own
                del _provided[key]

    return withdraw


def daemon_parts() -> DaemonParts:
    """The parts of the daemon running the calling turn; `ToolError` outside a turn of a running daemon."""
    bound = get_runtime_context()
    paths = bound.runtime_paths if bound is not None else None
    if paths is None:
        raise ToolError("this tool works in a conversation with the running daemon only")
    with _lock:
        parts = _provided.get(Path(paths.storage_root).resolve())
    if parts is None:
        raise ToolError("the daemon is starting or stopping; try again in a moment")
    return parts


def tool_caller(*, room_needed: bool = True) -> ToolCaller:
    """The agent, conversation and person the calling turn is for; `ToolError` when there is no such turn."""
    bound = get_runtime_context()
    if bound is None or not bound.agent_name:
        raise ToolError("this tool works in a conversation only")
    if room_needed and not bound.room_id:
        raise ToolError("this tool works in a Matrix room only")
    return ToolCaller(
        agent_name=bound.agent_name,
        room_id=bound.room_id or "",
        thread_id=bound.resolved_thread_id,
        requester_id=bound.requester_id or "",
        session_id=bound.session_id,
        correlation_id=bound.correlation_id,
        config=bound.config,
    )


def tool_payload(tool: str, status: str, **fields: Any) -> str:
    """A tool's result as MindRoom's custom tools give it: JSON with `status`, `tool` and the fields, keys sorted."""
    return json.dumps({"status": status, "tool": tool, **fields}, sort_keys=True, ensure_ascii=False, default=str)
