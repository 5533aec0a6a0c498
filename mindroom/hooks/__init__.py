"""The hook host: `@hook`, `HookRegistry`, contexts, transport objects and event names.

Both generations of the plugin API are here: the hooks spec's twelve events and the 2026 API's nine more,
with their contexts and the capability types plugins import (`HookMessageSender`, `HookMatrixAdmin`, ...),
and the daemon's own model-call events (`model:before_call`, `model:after_call`).
This package imports neither nio nor agno: plugins and tests can use it on its own.
"""

# ruff: noqa: F403 - each of the package's names comes from the `__all__` of the module defining it.
from mindroom.hooks.capabilities import *
from mindroom.hooks.context import *
from mindroom.hooks.decorators import *
from mindroom.hooks.enrichment import *
from mindroom.hooks.hook_context import *
from mindroom.hooks.model_contexts import *
from mindroom.hooks.origin import *
from mindroom.hooks.registry import *
from mindroom.hooks.telemetry import *
from mindroom.hooks.tool_contexts import *
from mindroom.hooks.transport import *
from mindroom.hooks.types import *
from mindroom.hooks.types import EVENT_CONSTANTS, HOOK_CONTEXTS, OWN_EVENT_CONSTANTS, OWN_HOOK_CONTEXTS, export_order

# The events' constants and their contexts come from the one table of built-in events (`EVENT_TABLE`).
__all__ = export_order(
    [
        *EVENT_CONSTANTS,
        *HOOK_CONTEXTS,
        *OWN_EVENT_CONSTANTS,
        *OWN_HOOK_CONTEXTS,
        "BUILTIN_EVENTS",
        "DEFAULT_APPROVAL_TIMEOUT_S",
        "DEFAULT_TIMEOUTS_MS",
        "NEWER_EVENTS",
        "OWN_EVENTS",
        "PIPELINE_ORDER",
        "RESERVED_NAMESPACES",
        "AgentMessageSnapshot",
        "ApprovalRequest",
        "ApprovalRequester",
        "CancelledResponseInfo",
        "EnrichmentItem",
        "FinalResponseDraft",
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
        "MessageEnvelope",
        "MessageTarget",
        "ModelCallScope",
        "RegisteredHook",
        "ResponseDraft",
        "ResponseResult",
        "ResponseUsage",
        "SenderKind",
        "ToolEnvironment",
        "ToolEnvironmentChanges",
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
)
