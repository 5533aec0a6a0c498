"""Hook contexts: what a hook receives, with the capabilities the daemon binds to it.

Every context is constructible with keywords only and has defaults for the base fields, so a plugin's
own tests can build one directly (`ToolBeforeCallContext(tool_name=..., arguments=..., ...)`). The
transport objects the contexts carry live in `transport.py` and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from mindroom.constants import RuntimePaths
from mindroom.hooks.capabilities import AgentMessageSnapshotReader, HookMatrixAdmin, RelaySender
from mindroom.hooks.enrichment import CachePolicy, EnrichmentItem
from mindroom.hooks.hook_context import (
    HookContext,
    MessageSender,
    RoomStatePutter,
    RoomStateQuerier,
    _MessageContext,
)
from mindroom.hooks.response_contexts import (
    CancelledResponseContext,
    CancelledResponseInfo,
    FinalResponseDraft,
    FinalResponseTransformContext,
    SystemEnrichContext,
)
from mindroom.hooks.session_contexts import (
    CompactionHookContext,
    HistoryScope,
    RoomMemberJoinedContext,
    RoomMemberLeftContext,
    SessionHookContext,
)
from mindroom.hooks.tool_contexts import (
    ToolAfterCallContext,
    ToolBeforeCallContext,
    ToolEnvironment,
    ToolEnvironmentContext,
)
from mindroom.hooks.transport import (
    MessageEnvelope,
    MessageTarget,
    ResponseDraft,
    ResponseResult,
    ResponseUsage,
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
)

__all__ = [
    "AfterResponseContext",
    "AgentLifecycleContext",
    "BeforeResponseContext",
    "CancelledResponseContext",
    "CancelledResponseInfo",
    "CompactionHookContext",
    "ConfigReloadedContext",
    "CustomEventContext",
    "FinalResponseDraft",
    "FinalResponseTransformContext",
    "HistoryScope",
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
    "ResponseUsage",
    "RoomMemberJoinedContext",
    "RoomMemberLeftContext",
    "RoomStatePutter",
    "RoomStateQuerier",
    "ScheduleFiredContext",
    "SessionHookContext",
    "SystemEnrichContext",
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolEnvironment",
    "ToolEnvironmentContext",
    "ToolTraceEntry",
    "new_correlation_id",
]

_TOOL_RUNTIME_FIELDS = ("config", "runtime_paths", "message_sender", "room_state_querier", "room_state_putter")


@dataclass(frozen=True, slots=True)
class HookBindings:
    """The capabilities every context of one bot gets: config, paths, its Matrix send/state/admin helpers,
    when it started and a reader of the messages it has seen.

    Every hook context takes `fields()`. A `ToolRuntimeContext` takes `tool_runtime_fields()`: the same
    but the start time and the snapshot reader, which tools do not have. The message sender is wrapped
    in a `RelaySender`, so a plugin calling it raw in the 2026 shape works.
    """

    config: Any = None
    runtime_paths: RuntimePaths | None = None
    message_sender: MessageSender | None = field(default=None, repr=False)
    room_state_querier: RoomStateQuerier | None = field(default=None, repr=False)
    room_state_putter: RoomStatePutter | None = field(default=None, repr=False)
    matrix_admin: HookMatrixAdmin | None = field(default=None, repr=False)
    runtime_started_at: float | None = None
    agent_message_snapshot_reader: AgentMessageSnapshotReader | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        sender = self.message_sender
        if sender is not None and type(sender) is not RelaySender:
            object.__setattr__(self, "message_sender", RelaySender(sender))

    def fields(self) -> dict[str, Any]:
        """Keywords for any hook context: `tool_runtime_fields()`, and the start time and the snapshot
        reader when bound (so every context offers `get_latest_agent_message_snapshot`)."""
        values = self.tool_runtime_fields()
        if self.runtime_started_at is not None:
            values["runtime_started_at"] = self.runtime_started_at
        if self.agent_message_snapshot_reader is not None:
            values["agent_message_snapshot_reader"] = self.agent_message_snapshot_reader
        return values

    def tool_runtime_fields(self) -> dict[str, Any]:
        """Keywords for a `ToolRuntimeContext`: the five, and the router's admin helper when bound."""
        values = {name: getattr(self, name) for name in _TOOL_RUNTIME_FIELDS}
        if self.matrix_admin is not None:
            values["matrix_admin"] = self.matrix_admin
        return values


@dataclass(slots=True, kw_only=True)
class MessageReceivedContext(_MessageContext):
    """`message:received`: set `suppress` to stop this entity from handling the message."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_RECEIVED
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("suppress",)

    suppress: bool = False
    skip_plugin_names: frozenset[str] = frozenset()


@dataclass(slots=True, kw_only=True)
class MessageEnrichContext(_MessageContext):
    """`message:enrich`: contribute live context with `add_metadata()` or by returning `EnrichmentItem`s.

    `target_member_names` lists a team's members, and is None for a single agent.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_ENRICH

    target_entity_name: str = ""
    target_member_names: tuple[str, ...] | None = None
    items: list[EnrichmentItem] = field(default_factory=list, repr=False)

    def add_metadata(
        self, key: str, text: str, *, cache_policy: CachePolicy = "volatile", persist: bool | None = None
    ) -> None:
        """Add one enrichment item for the model's view of this turn.

        `persist`: None (default) strips it from stored history after the answer, as the hooks spec does;
        True keeps it in history; False sends it with this request only and never stores it.
        """
        self.items.append(EnrichmentItem(key=key, text=text, cache_policy=cache_policy, persist=persist))

    def collector_copy(self) -> MessageEnrichContext:
        """One hook's copy, with its own empty item list."""
        copy = self.clone()
        assert isinstance(copy, MessageEnrichContext)
        copy.items = []
        return copy


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
    joined_room_ids: tuple[str, ...] = ()

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
class CustomEventContext(HookContext):
    """A plugin-defined event: `payload` is what the emitter passed."""

    payload: dict[str, Any] = field(default_factory=dict)
    source_plugin: str = ""
    agent_name: str | None = None
    room_id: str | None = None
    message_received_depth: int = 0

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent and room the emitting tool ran for, when known."""
        return self.agent_name, self.room_id

    def _synthetic_depth(self) -> int:
        return self.message_received_depth + 1
