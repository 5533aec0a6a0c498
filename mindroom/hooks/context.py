"""Hook contexts: what a hook receives, with the capabilities the daemon binds to it.

Every context is constructible with keywords only and has defaults for the base fields, so a plugin's
own tests can build one directly (`ToolBeforeCallContext(tool_name=..., arguments=..., ...)`). The
transport objects the contexts carry live in `transport.py` and are re-exported here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mindroom.constants import RuntimePaths
from mindroom.hooks.enrichment import CachePolicy, EnrichmentItem
from mindroom.hooks.hook_context import HookContext, MessageSender, RoomStatePutter, RoomStateQuerier
from mindroom.hooks.transport import (
    MessageEnvelope,
    MessageTarget,
    ResponseDraft,
    ResponseResult,
    ToolTraceEntry,
    new_correlation_id,
)
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

__all__ = [
    "AfterResponseContext",
    "AgentLifecycleContext",
    "BeforeResponseContext",
    "ConfigReloadedContext",
    "CustomEventContext",
    "HookBindings",
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
    "new_correlation_id",
]

_BINDING_FIELDS = ("config", "runtime_paths", "message_sender", "room_state_querier", "room_state_putter")


@dataclass(frozen=True, slots=True)
class HookBindings:
    """The capabilities every context of one bot gets: config, paths, and its Matrix send/state helpers."""

    config: Any = None
    runtime_paths: RuntimePaths | None = None
    message_sender: MessageSender | None = field(default=None, repr=False)
    room_state_querier: RoomStateQuerier | None = field(default=None, repr=False)
    room_state_putter: RoomStatePutter | None = field(default=None, repr=False)

    def fields(self) -> dict[str, Any]:
        """The five values as keywords for a context constructor: `MessageReceivedContext(**b.fields(), ...)`."""
        return {name: getattr(self, name) for name in _BINDING_FIELDS}


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
    FROZEN: ClassVar[bool] = True

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
    FROZEN: ClassVar[bool] = True

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
    FROZEN: ClassVar[bool] = True

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
    FROZEN: ClassVar[bool] = True

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
    FROZEN: ClassVar[bool] = True

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

    def hook_copy(self) -> ToolAfterCallContext:
        """A copy with its own `arguments` and `result`, so one observer's edits reach no other."""
        view = self.clone()
        assert isinstance(view, ToolAfterCallContext)
        view.arguments = _snapshot(self.arguments)
        view.result = _snapshot(self.result)
        return view


_ATOMS = (str, int, float, bool, bytes, type(None))


def _snapshot(value: Any) -> Any:
    """A deep copy; JSON-shaped data (what models send and most tools return) is copied without `deepcopy`."""
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {key: _snapshot(item) for key, item in value.items()}
    if type(value) is list:
        return [_snapshot(item) for item in value]
    try:
        return copy.deepcopy(value)
    except Exception:  # an uncopyable object (a lock, a socket): hooks share it, as they would share its text
        return value


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
