"""The hook host: `@hook`, `HookRegistry`, contexts, transport objects and event names.

Both generations of the plugin API are here: the hooks spec's twelve events and the 2026 API's nine more,
with their contexts and the capability types plugins import (`HookMessageSender`, `HookMatrixAdmin`, ...).
This package imports neither nio nor agno: plugins and tests can use it on its own.
"""

# ruff: noqa: F403, F405 - the package's names are listed once, in `__all__`; each comes from the
# `__all__` of the module defining it (a test checks every one of them exists).
from mindroom.hooks.capabilities import *
from mindroom.hooks.context import *
from mindroom.hooks.decorators import *
from mindroom.hooks.enrichment import *
from mindroom.hooks.hook_context import *
from mindroom.hooks.origin import *
from mindroom.hooks.registry import *
from mindroom.hooks.telemetry import *
from mindroom.hooks.tool_contexts import *
from mindroom.hooks.transport import *
from mindroom.hooks.types import *

__all__ = [
    "BUILTIN_EVENTS",
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "DEFAULT_TIMEOUTS_MS",
    "EVENT_AGENT_STARTED",
    "EVENT_AGENT_STOPPED",
    "EVENT_BOT_READY",
    "EVENT_COMPACTION_AFTER",
    "EVENT_COMPACTION_BEFORE",
    "EVENT_CONFIG_RELOADED",
    "EVENT_MESSAGE_AFTER_RESPONSE",
    "EVENT_MESSAGE_BEFORE_RESPONSE",
    "EVENT_MESSAGE_CANCELLED",
    "EVENT_MESSAGE_ENRICH",
    "EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM",
    "EVENT_MESSAGE_RECEIVED",
    "EVENT_REACTION_RECEIVED",
    "EVENT_ROOM_MEMBER_JOINED",
    "EVENT_ROOM_MEMBER_LEFT",
    "EVENT_SCHEDULE_FIRED",
    "EVENT_SESSION_STARTED",
    "EVENT_SYSTEM_ENRICH",
    "EVENT_TOOL_AFTER_CALL",
    "EVENT_TOOL_BEFORE_CALL",
    "EVENT_TOOL_ENVIRONMENT",
    "NEWER_EVENTS",
    "PIPELINE_ORDER",
    "RESERVED_NAMESPACES",
    "AfterResponseContext",
    "AgentLifecycleContext",
    "AgentMessageSnapshot",
    "ApprovalRequest",
    "ApprovalRequester",
    "BeforeResponseContext",
    "CancelledResponseContext",
    "CancelledResponseInfo",
    "CompactionHookContext",
    "ConfigReloadedContext",
    "CustomEventContext",
    "EnrichmentItem",
    "FinalResponseDraft",
    "FinalResponseTransformContext",
    "HistoryScope",
    "HookBindings",
    "HookContext",
    "HookContextBase",
    "HookExecutionMode",
    "HookMatrixAdmin",
    "HookMessageSender",
    "HookMetadata",
    "HookRegistry",
    "HookRoomStatePutter",
    "HookRoomStateQuerier",
    "HookStats",
    "HookTelemetry",
    "MessageEnrichContext",
    "MessageEnvelope",
    "MessageReceivedContext",
    "MessageTarget",
    "ReactionReceivedContext",
    "RegisteredHook",
    "ResponseDraft",
    "ResponseResult",
    "ResponseUsage",
    "RoomMemberJoinedContext",
    "RoomMemberLeftContext",
    "ScheduleFiredContext",
    "SenderKind",
    "SessionHookContext",
    "SystemEnrichContext",
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolEnvironment",
    "ToolEnvironmentChanges",
    "ToolEnvironmentContext",
    "ToolTraceEntry",
    "TurnIntent",
    "TurnOrigin",
    "TurnTrust",
    "append_enrichment",
    "default_timeout_ms",
    "enrichment_digest",
    "execution_mode",
    "get_hook_metadata",
    "hook",
    "hook_telemetry",
    "merge_tool_environment",
    "render_enrichment_block",
    "render_system_context",
    "strip_enrichment_blocks",
    "transient_context_message",
    "validate_event_name",
]
