"""`HookContext`: the base fields and helpers every hook context has (the event contexts are in `context.py`).

`HookContextBase` holds what the engine needs of any context (names, settings, logger, copying); the
lean `ToolEnvironmentContext` is one. `HookContext` adds the daemon's capabilities: state folder,
message sending, room state, the router's admin helper, message snapshots and `is_active()`.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import structlog

from mindroom.constants import (
    HOOK_DISPATCH_KEY,
    HOOK_ORIGIN_EVENT_KEY,
    HOOK_SOURCE_KEY,
    ORIGINAL_SENDER_KEY,
    SYNTHETIC_DEPTH_KEY,
    RuntimePaths,
)
from mindroom.hooks.capabilities import AgentMessageSnapshot, AgentMessageSnapshotReader, HookMatrixAdmin, RelaySender
from mindroom.hooks.state import plugin_state_dir
from mindroom.hooks.transport import MessageEnvelope, new_correlation_id
from mindroom.hooks.types import EVENT_MESSAGE_RECEIVED
from mindroom.logging_config import get_logger
from mindroom.private_files import private_dir

__all__ = [
    "HookContext",
    "HookContextBase",
    "MessageSender",
    "RegistryGeneration",
    "RoomStatePutter",
    "RoomStateQuerier",
]

MessageSender = Callable[..., Awaitable[Any]]
RoomStateQuerier = Callable[[str, str, str | None], Awaitable[dict[str, Any] | None]]
RoomStatePutter = Callable[[str, str, str, dict[str, Any]], Awaitable[bool]]

_UNSET: Any = object()
_base_logger = get_logger("mindroom.plugins")


@functools.lru_cache(maxsize=128)
def _event_logger(event_name: str, processors: int) -> Any:
    """The plugins' logger bound to one event name, made once per logging configuration (`processors`: the
    identity of its processor list): a bound logger is immutable (binding makes a new one), and a context is made
    for every hook call."""
    del processors
    return _base_logger.bind(event_name=event_name)


class RegistryGeneration:
    """Shared by every hook of one registry: `live` turns False once a reload has swapped in a newer one."""

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live = True

    def __repr__(self) -> str:
        return f"RegistryGeneration(live={self.live})"


@dataclass(slots=True, kw_only=True)
class HookContextBase:
    """What every hook context has: the event, the plugin and its settings, config, paths, logger, correlation."""

    DEFAULT_EVENT: ClassVar[str] = ""
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ()
    SNAPSHOT: ClassVar[Callable[[Any], Any] | None] = None
    # Events the spec calls frozen: every hook gets its own copy, so its writes reach no one else.
    FROZEN: ClassVar[bool] = False

    event_name: str = ""
    plugin_name: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    config: Any = None
    runtime_paths: RuntimePaths | None = None
    logger: Any = None
    correlation_id: str = field(default_factory=new_correlation_id)
    hook_name: str = ""
    # The engine binds the running hook's registry generation, for `is_active()`.
    registry_generation: RegistryGeneration | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.event_name:
            self.event_name = self.DEFAULT_EVENT
        if self.logger is None:
            self.logger = _event_logger(self.event_name, id(structlog.get_config()["processors"]))

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The (agent name, room id) this context concerns, for hook filters."""
        return None, None

    def clone(self) -> HookContextBase:
        """A shallow copy whose own attributes can be set without affecting this context."""
        clone: HookContextBase = _cloner(type(self))(self)
        return clone

    def hook_copy(self) -> HookContextBase | None:
        """What one hook of a frozen event sees: a copy whose changes reach neither later hooks nor the caller.

        None when the context cannot be copied; the engine then runs none of the emission's hooks.
        """
        return self.clone()

    def snapshot_mutable(self) -> Any:
        """The current values of the fields hooks may change (for monitor mode and failure rollback)."""
        snapshot = type(self).SNAPSHOT
        return snapshot(self) if snapshot is not None else None

    def restore_mutable(self, snapshot: Any) -> None:
        """Put back values taken by `snapshot_mutable`."""
        if len(self.MUTABLE_FIELDS) == 1:
            setattr(self, self.MUTABLE_FIELDS[0], snapshot)
            return
        for name, value in zip(self.MUTABLE_FIELDS, snapshot, strict=True):
            setattr(self, name, value)

    def __init_subclass__(cls) -> None:
        # Slotted dataclasses recreate the class, so zero-argument super() is unavailable here.
        cls.SNAPSHOT = operator.attrgetter(*cls.MUTABLE_FIELDS) if cls.MUTABLE_FIELDS else None


@dataclass(slots=True, kw_only=True)
class HookContext(HookContextBase):
    """Base fields and helpers every hook context has."""

    message_sender: MessageSender | None = field(default=None, repr=False, compare=False)
    room_state_querier: RoomStateQuerier | None = field(default=None, repr=False, compare=False)
    room_state_putter: RoomStatePutter | None = field(default=None, repr=False, compare=False)
    matrix_admin: HookMatrixAdmin | None = field(default=None, repr=False, compare=False)
    runtime_started_at: float | None = None
    agent_message_snapshot_reader: AgentMessageSnapshotReader | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        HookContextBase.__post_init__(self)
        sender = self.message_sender
        if sender is not None and type(sender) is not RelaySender:
            self.message_sender = RelaySender(sender)  # plugins may call it raw, in either API's shape

    def is_active(self) -> bool:
        """True while this hook's registry is the live one (no plugin reload has replaced it since)."""
        generation = self.registry_generation
        return generation is None or generation.live

    async def get_latest_agent_message_snapshot(
        self, room_id: str, sender: str, *, thread_id: str | None = None
    ) -> AgentMessageSnapshot | None:
        """The newest visible message of `sender` in the room level (`thread_id=None`) or a thread; None if none.

        Reads the daemon's local conversation data only. Without a bound reader it logs a warning.
        """
        reader = self.agent_message_snapshot_reader
        if reader is None:
            self.logger.warning("no agent message snapshot reader is bound", room_id=room_id, sender=sender)
            return None
        return await reader(room_id, sender, thread_id)

    @property
    def state_root(self) -> Path:
        """This plugin's persistent state directory, `<data>/plugins/<plugin_name>/`, created on first access."""
        # Without bound paths, the data directory sits beside a config in the working directory, as the
        # daemon's default does; the environment is read by the daemon alone.
        paths = self.runtime_paths if self.runtime_paths is not None else RuntimePaths.for_directory(Path.cwd())
        path = plugin_state_dir(paths.storage_root, self.plugin_name)
        private_dir(path)
        return path

    def _synthetic_depth(self) -> int:
        return 1

    def _original_sender(self) -> str | None:
        return None

    def _default_thread_id(self) -> str | None:
        return None

    async def send_message(
        self,
        room_id: str,
        text: str,
        *,
        thread_id: str | None = _UNSET,
        extra_content: Mapping[str, Any] | None = None,
        trigger_dispatch: bool = False,
    ) -> str | None:
        """Send a hook-originated message; returns its event id, or None when no sender is bound."""
        if self.message_sender is None:
            return None
        if thread_id is _UNSET:
            thread_id = self._default_thread_id()
        content: dict[str, Any] = dict(extra_content or {})
        original_sender = self._original_sender()
        if original_sender is not None:
            content.setdefault(ORIGINAL_SENDER_KEY, original_sender)
        content[SYNTHETIC_DEPTH_KEY] = self._synthetic_depth()
        content[HOOK_SOURCE_KEY] = f"{self.plugin_name}:{self.hook_name}" if self.hook_name else self.plugin_name
        if self.event_name == EVENT_MESSAGE_RECEIVED:
            content[HOOK_ORIGIN_EVENT_KEY] = EVENT_MESSAGE_RECEIVED
        if trigger_dispatch:
            content[HOOK_DISPATCH_KEY] = True
        result: str | None = await self.message_sender(room_id, text, thread_id=thread_id, extra_content=content)
        return result

    async def query_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """Read Matrix room state (one event's content, or `{state_key: content}`); None if unavailable."""
        if self.room_state_querier is None:
            return None
        return await self.room_state_querier(room_id, event_type, state_key)

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> bool:
        """Write one Matrix room state event; False on Matrix error or when no putter is bound."""
        if self.room_state_putter is None:
            return False
        return await self.room_state_putter(room_id, event_type, state_key, content)


def _placeholder_envelope() -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id="",
        room_id="",
        thread_id=None,
        resolved_thread_id=None,
        requester_id="",
        sender_id="",
        body="",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="",
        source_kind="message",
    )


@dataclass(slots=True, kw_only=True)
class _MessageContext(HookContext):
    """A context derived from one inbound message."""

    envelope: MessageEnvelope = field(default_factory=_placeholder_envelope)

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The envelope's agent and room."""
        return self.envelope.agent_name, self.envelope.room_id

    def _synthetic_depth(self) -> int:
        return self.envelope.message_received_depth + 1

    def _original_sender(self) -> str | None:
        return self.envelope.requester_id or None


_CLONERS: dict[type, Callable[[Any], Any]] = {}


def _cloner(cls: type) -> Callable[[Any], Any]:
    """A per-class copy function with one assignment per field (compiled once, like dataclasses' own methods)."""
    cloner = _CLONERS.get(cls)
    if cloner is None:
        lines = ["def clone(src):", "    new = _new(_cls)"]
        lines += [f"    new.{f.name} = src.{f.name}" for f in dataclasses.fields(cls)]
        lines.append("    return new")
        namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
        exec("\n".join(lines), namespace)  # noqa: S102 - field names come from our own dataclasses
        cloner = namespace["clone"]
        _CLONERS[cls] = cloner
    return cloner
