"""`mindroom.plugin_api`: the one import surface for plugins, stable while the defining modules move.

It only re-exports. It holds the names of MindRoom's 2026.10 plugin API (events, contexts, transport
objects, tool registration and runtime context, model and file helpers) and `PLUGIN_API_VERSION`.
Left out on purpose: the OAuth, Atlassian and Google Workspace helpers and `@automation` (with `Ask`,
`Done`, `AutomationContext`, `automation_threads`), which this daemon does not provide. Importing it
loads neither nio nor agno.
"""

# ruff: noqa: F401, F403 - `__all__` is derived: the hook surface (each event's constant and context) comes
# whole from the one table of built-in events (`mindroom.hooks.types.EVENT_TABLE`).
from mindroom.constants import (
    ROUTER_AGENT_NAME,
    VOICE_PREFIX,
    resolve_config_relative_path,
)
from mindroom.dispatch_source import ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND, TRUSTED_INTERNAL_RELAY_SOURCE_KIND
from mindroom.hooks.context import *
from mindroom.hooks.decorators import hook
from mindroom.hooks.enrichment import EnrichmentItem
from mindroom.hooks.types import *
from mindroom.hooks.types import EVENT_CONSTANTS, HOOK_CONTEXTS, export_order
from mindroom.logging_config import get_logger
from mindroom.message_target import MessageTarget
from mindroom.model_loading import build_model_provider, complete_prompt
from mindroom.plugin_api.version import PLUGIN_API_VERSION
from mindroom.tool_system.declarations import (
    ConfigField,
    SetupType,
    ToolCategory,
    ToolExecutionTarget,
    ToolFileAccess,
    ToolManagedInitArg,
    ToolStatus,
)
from mindroom.tool_system.metadata import get_tool_by_name
from mindroom.tool_system.path_confinement import (
    open_directory_within_root,
    read_regular_file_within_root,
    resolve_agent_file,
    write_file_within_root,
)
from mindroom.tool_system.registration import register_tool_with_metadata
from mindroom.tool_system.runtime_context import (
    ResolvedWorkerTarget,
    ToolRuntimeContext,
    ToolRuntimeHookBindings,
    build_execution_identity_from_runtime_context,
    emit_custom_event,
    get_tool_runtime_context,
    resolve_tool_runtime_hook_bindings,
)
from mindroom.turn_origin import (
    SenderKind,
    TurnIntent,
    TurnOrigin,
    TurnTrust,
)

__all__ = export_order(
    [
        *EVENT_CONSTANTS,
        *HOOK_CONTEXTS,
        "ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND",
        "PLUGIN_API_VERSION",
        "ROUTER_AGENT_NAME",
        "TRUSTED_INTERNAL_RELAY_SOURCE_KIND",
        "VOICE_PREFIX",
        "ConfigField",
        "EnrichmentItem",
        "FinalResponseDraft",
        "MessageEnvelope",
        "MessageTarget",
        "ResolvedWorkerTarget",
        "ResponseDraft",
        "ResponseResult",
        "SenderKind",
        "SetupType",
        "ToolCategory",
        "ToolExecutionTarget",
        "ToolFileAccess",
        "ToolManagedInitArg",
        "ToolRuntimeContext",
        "ToolRuntimeHookBindings",
        "ToolStatus",
        "TurnIntent",
        "TurnOrigin",
        "TurnTrust",
        "build_execution_identity_from_runtime_context",
        "build_model_provider",
        "complete_prompt",
        "emit_custom_event",
        "get_logger",
        "get_tool_by_name",
        "get_tool_runtime_context",
        "hook",
        "open_directory_within_root",
        "read_regular_file_within_root",
        "register_tool_with_metadata",
        "resolve_agent_file",
        "resolve_config_relative_path",
        "resolve_tool_runtime_hook_bindings",
        "write_file_within_root",
    ]
)
