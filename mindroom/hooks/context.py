"""Hook contexts (what a hook receives) and the transport objects they carry.

Every context is constructible with keywords only and has defaults for the base fields, so a plugin's
own tests can build one directly (`ToolBeforeCallContext(tool_name=..., arguments=..., ...)`).
"""

from __future__ import annotations

import dataclasses
import operator
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mindroom.constants import (
    DEFAULT_STORAGE_DIRNAME,
    HOOK_DISPATCH_KEY,
    HOOK_ORIGIN_EVENT_KEY,
    HOOK_SOURCE_KEY,
    ORIGINAL_SENDER_KEY,
    SYNTHETIC_DEPTH_KEY,
    RuntimePaths,
)
from mindroom.hooks.enrichment import CachePolicy, EnrichmentItem
from mindroom.hooks.state import plugin_state_dir
from mindroom.hooks.types import (
    EVENT_AGENT_STARTED,
    EVENT_CONFIG_RELOADED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_REACTION_RECEIVED,
    EVENT_SCHEDULE_FIRED,
    EVENT_TOOL_AFTER_CALL,
    EVENT_TOOL_BEFORE_CALL,
)
from mindroom.logging_config import get_logger

__all__ = [
    "AfterResponseContext",
    "AgentLifecycleContext",
    "BeforeResponseContext",
    "ConfigReloadedContext",
    "CustomEventContext",
    "HookContext",
    "MessageEnrichContext",
    "MessageEnvelope",
    "MessageReceivedContext",
    "MessageSender",
    "MessageTarget",
    "ReactionReceivedContext",
    "ResponseDraft",
    "ResponseResult",
    "RoomStatePutter",
    "RoomStateQuerier",
    "ScheduleFiredContext",
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolTraceEntry",
]

MessageSender = Callable[..., Awaitable[Any]]
RoomStateQuerier = Callable[[str, str, str | None], Awaitable[dict[str, Any] | None]]
RoomStatePutter = Callable[[str, str, str, dict[str, Any]], Awaitable[bool]]

_UNSET: Any = object()
_base_logger = get_logger("mindroom.plugins")


def new_correlation_id() -> str:
    """A fresh unique id for one inbound event."""
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class MessageTarget:
    """Where a message lives: room, thread, and the thread it resolves to."""

    room_id: str
    thread_id: str | None
    resolved_thread_id: str | None


@dataclass(frozen=True, slots=True)
class MessageEnvelope:
    """One inbound message, normalized, as every message hook sees it."""

    source_event_id: str
    room_id: str
    thread_id: str | None
    resolved_thread_id: str | None
    requester_id: str
    sender_id: str
    body: str
    attachment_ids: tuple[str, ...]
    mentioned_agents: tuple[str, ...]
    agent_name: str
    source_kind: str
    hook_source: str | None = None
    message_received_depth: int = 0

    @property
    def target(self) -> MessageTarget:
        """The room and thread this message belongs to."""
        return MessageTarget(self.room_id, self.thread_id, self.resolved_thread_id)


@dataclass(frozen=True, slots=True)
class ToolTraceEntry:
    """One tool call made while generating a response."""

    tool_name: str
    args_preview: str = ""
    result_preview: str | None = None
    error: str | None = None
    blocked: bool = False
    duration_ms: float = 0.0


@dataclass(slots=True)
class ResponseDraft:
    """A generated response before it is sent; `message:before_response` hooks may edit or replace it."""

    response_text: str
    response_kind: str
    tool_trace: list[ToolTraceEntry] | None
    extra_content: dict[str, Any] | None
    envelope: MessageEnvelope
    suppress: bool = False

    def copy(self) -> ResponseDraft:
        """A copy whose fields and top-level containers can be edited without touching this one."""
        return ResponseDraft(
            self.response_text,
            self.response_kind,
            None if self.tool_trace is None else list(self.tool_trace),
            None if self.extra_content is None else dict(self.extra_content),
            self.envelope,
            self.suppress,
        )


@dataclass(frozen=True, slots=True)
class ResponseResult:
    """What was delivered to Matrix, as `message:after_response` hooks see it."""

    response_text: str
    response_event_id: str
    delivery_kind: str
    response_kind: str
    envelope: MessageEnvelope


@dataclass(slots=True, kw_only=True)
class HookContext:
    """Base fields and helpers every hook context has."""

    DEFAULT_EVENT: ClassVar[str] = ""
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ()
    SNAPSHOT: ClassVar[Callable[[Any], Any] | None] = None

    event_name: str = ""
    plugin_name: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    config: Any = None
    runtime_paths: RuntimePaths | None = None
    logger: Any = None
    correlation_id: str = field(default_factory=new_correlation_id)
    hook_name: str = ""
    message_sender: MessageSender | None = field(default=None, repr=False, compare=False)
    room_state_querier: RoomStateQuerier | None = field(default=None, repr=False, compare=False)
    room_state_putter: RoomStatePutter | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.event_name:
            self.event_name = self.DEFAULT_EVENT
        if self.logger is None:
            self.logger = _base_logger.bind(event_name=self.event_name)

    # -- storage -------------------------------------------------------------------------------
    @property
    def state_root(self) -> Path:
        """This plugin's persistent state directory, `<data>/plugins/<plugin_name>/`, created on first access."""
        if self.runtime_paths is not None:
            storage_root = self.runtime_paths.storage_root
        else:
            storage_root = Path(os.environ.get("MINDROOM_STORAGE_PATH", DEFAULT_STORAGE_DIRNAME)).resolve()
        path = plugin_state_dir(storage_root, self.plugin_name)
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- scope used by agents=/rooms= filters ---------------------------------------------------
    def hook_scope(self) -> tuple[str | None, str | None]:
        """The (agent name, room id) this context concerns, for hook filters."""
        return None, None

    # -- Matrix helpers ------------------------------------------------------------------------
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

    # -- engine support --------------------------------------------------------------------------
    def clone(self) -> HookContext:
        """A shallow copy whose own attributes can be set without affecting this context."""
        copy: HookContext = _cloner(type(self))(self)
        return copy

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


@dataclass(slots=True, kw_only=True)
class MessageReceivedContext(_MessageContext):
    """`message:received`: set `suppress` to stop this entity from handling the message."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_RECEIVED
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("suppress",)

    suppress: bool = False


@dataclass(slots=True, kw_only=True)
class MessageEnrichContext(_MessageContext):
    """`message:enrich`: contribute live context with `add_metadata()` or by returning `EnrichmentItem`s."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_ENRICH

    target_entity_name: str = ""
    items: list[EnrichmentItem] = field(default_factory=list, repr=False)

    def add_metadata(self, key: str, text: str, *, cache_policy: CachePolicy = "volatile") -> None:
        """Add one enrichment item for the model's view of this turn."""
        self.items.append(EnrichmentItem(key=key, text=text, cache_policy=cache_policy))


@dataclass(slots=True, kw_only=True)
class BeforeResponseContext(_MessageContext):
    """`message:before_response`: edit or replace `draft`, or set `draft.suppress` to send nothing."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_BEFORE_RESPONSE

    draft: ResponseDraft = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        HookContext.__post_init__(self)
        if self.draft is None:
            self.draft = ResponseDraft("", "ai", None, None, self.envelope)
        elif self.envelope.source_event_id == "" and self.draft.envelope.source_event_id != "":
            self.envelope = self.draft.envelope


@dataclass(slots=True, kw_only=True)
class AfterResponseContext(_MessageContext):
    """`message:after_response`: the frozen `result` of what was delivered."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_AFTER_RESPONSE

    result: ResponseResult = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        HookContext.__post_init__(self)
        if self.result is None:
            self.result = ResponseResult("", "", "sent", "ai", self.envelope)
        elif self.envelope.source_event_id == "" and self.result.envelope.source_event_id != "":
            self.envelope = self.result.envelope


@dataclass(slots=True, kw_only=True)
class AgentLifecycleContext(HookContext):
    """`agent:started`, `bot:ready`, `agent:stopped`: one entity's lifecycle."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_AGENT_STARTED

    entity_name: str = ""
    entity_type: str = "agent"
    rooms: tuple[str, ...] = ()
    matrix_user_id: str | None = None
    stop_reason: str | None = None

    @property
    def agent_name(self) -> str:
        """Alias of `entity_name`."""
        return self.entity_name

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The entity; lifecycle events belong to no single room."""
        return self.entity_name, None


@dataclass(slots=True, kw_only=True)
class ScheduleFiredContext(HookContext):
    """`schedule:fired`: change `message_text` or set `suppress` before the scheduled message posts."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_SCHEDULE_FIRED
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("message_text", "suppress")

    task_id: str = ""
    room_id: str = ""
    thread_id: str | None = None
    agent_name: str | None = None
    created_by: str | None = None
    schedule: str = ""
    message_text: str = ""
    suppress: bool = False

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The scheduling agent (if any) and room."""
        return self.agent_name, self.room_id

    def _default_thread_id(self) -> str | None:
        return self.thread_id

    def _original_sender(self) -> str | None:
        return self.created_by


@dataclass(slots=True, kw_only=True)
class ReactionReceivedContext(HookContext):
    """`reaction:received`: a reaction on a message in an agent's room."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_REACTION_RECEIVED

    room_id: str = ""
    thread_id: str | None = None
    reaction_key: str = ""
    target_event_id: str = ""
    sender_id: str = ""
    agent_name: str = ""
    reaction_event_id: str = ""

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent that saw the reaction, and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.sender_id or None


@dataclass(slots=True, kw_only=True)
class ConfigReloadedContext(HookContext):
    """`config:reloaded`: after a new config was applied and affected entities restarted."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_CONFIG_RELOADED

    old_config: Any = None
    new_config: Any = None
    added_entities: tuple[str, ...] = ()
    removed_entities: tuple[str, ...] = ()
    changed_entities: tuple[str, ...] = ()
    plugin_changes: tuple[str, ...] = ()


@dataclass(slots=True, kw_only=True)
class ToolBeforeCallContext(HookContext):
    """`tool:before_call`: call `decline(reason)` to replace the tool call with a declined result."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_TOOL_BEFORE_CALL
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("declined", "decline_reason")

    tool_name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    agent_name: str = ""
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    declined: bool = False
    decline_reason: str = ""

    def decline(self, reason: str) -> None:
        """Refuse this tool call; the model sees `reason` instead of the tool's result."""
        self.declined = True
        self.decline_reason = str(reason)

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The calling agent and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.requester_id


@dataclass(slots=True, kw_only=True)
class ToolAfterCallContext(HookContext):
    """`tool:after_call`: a snapshot of one finished, failed or declined tool call."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_TOOL_AFTER_CALL

    tool_name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    agent_name: str = ""
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    result: object | None = None
    error: BaseException | None = None
    blocked: bool = False
    duration_ms: float = 0.0

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The calling agent and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.requester_id


@dataclass(slots=True, kw_only=True)
class CustomEventContext(HookContext):
    """A plugin-defined event: `payload` is what the emitter passed."""

    payload: dict[str, Any] = field(default_factory=dict)
    source_plugin: str = ""
    agent_name: str | None = None
    room_id: str | None = None

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent and room the emitting tool ran for, when known."""
        return self.agent_name, self.room_id
