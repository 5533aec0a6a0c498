"""`mindroom.plugin_api`: the pinned import surface, re-exports only, light to import."""

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import mindroom.plugin_api as plugin_api

PINNED = [
    "ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND",
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
    "PLUGIN_API_VERSION",
    "ROUTER_AGENT_NAME",
    "TRUSTED_INTERNAL_RELAY_SOURCE_KIND",
    "VOICE_PREFIX",
    "AfterResponseContext",
    "AgentLifecycleContext",
    "BeforeResponseContext",
    "CancelledResponseContext",
    "CompactionHookContext",
    "ConfigField",
    "ConfigReloadedContext",
    "CustomEventContext",
    "EnrichmentItem",
    "FinalResponseDraft",
    "FinalResponseTransformContext",
    "MessageEnrichContext",
    "MessageEnvelope",
    "MessageReceivedContext",
    "MessageTarget",
    "ReactionReceivedContext",
    "ResolvedWorkerTarget",
    "ResponseDraft",
    "ResponseResult",
    "RoomMemberJoinedContext",
    "RoomMemberLeftContext",
    "ScheduleFiredContext",
    "SenderKind",
    "SessionHookContext",
    "SetupType",
    "SystemEnrichContext",
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolCategory",
    "ToolEnvironmentContext",
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
# Names of MindRoom's 96 that this daemon does not provide (documented in docs/plugins.md).
LEFT_OUT = {
    "OAuthProvider",
    "OAuthDiscoveryConfig",
    "oauth_runtime_bootstrapper",
    "google_cloud_oauth_provider",
    "oauth_connect_url",
    "build_oauth_connect_instruction",
    "AtlassianConnectionConfig",
    "atlassian_connection_oauth_provider",
    "register_atlassian_connection_tools",
    "GoogleWorkspaceConfig",
    "google_workspace_oauth_providers",
    "register_google_workspace_tools",
    "automation",
    "Ask",
    "Done",
    "AutomationContext",
    "automation_threads",
}


def test_plugin_api_all_is_pinned():
    assert list(plugin_api.__all__) == PINNED
    assert len(PINNED) == 80


def test_plugin_api_is_mindrooms_96_minus_what_is_left_out_plus_the_version():
    assert len(set(PINNED) - {"PLUGIN_API_VERSION"}) + len(LEFT_OUT) == 96
    assert not LEFT_OUT & set(PINNED)
    assert all(not hasattr(plugin_api, name) for name in LEFT_OUT)


def test_plugin_api_every_name_is_the_defining_modules_object():
    import mindroom.hooks as hooks
    from mindroom.tool_system import declarations, metadata, registration, runtime_context

    for name in PINNED:
        assert getattr(plugin_api, name) is not None
    for module in (hooks, declarations, registration, runtime_context, metadata):
        for name in set(PINNED) & set(module.__all__):
            assert getattr(plugin_api, name) is getattr(module, name), name


def test_plugin_api_event_constants_equal_their_event_strings():
    events = [name for name in PINNED if name.startswith("EVENT_")]

    assert len(events) == 21
    for name in events:
        value = getattr(plugin_api, name)
        namespace, _, event = value.partition(":")
        assert name == f"EVENT_{namespace.upper()}_{event.upper()}"


def test_plugin_api_hook_surface_is_the_event_tables():
    from mindroom.hooks.types import EVENT_CONSTANTS, HOOK_CONTEXTS

    pinned_events = {name for name in PINNED if name.startswith("EVENT_")}
    pinned_contexts = {name for name in PINNED if name.endswith("Context") and name != "ToolRuntimeContext"}
    assert pinned_events == set(EVENT_CONSTANTS)
    assert pinned_contexts == set(HOOK_CONTEXTS)


def test_plugin_api_version_is_year_dot_month():
    assert plugin_api.PLUGIN_API_VERSION == "2026.10"


def test_plugin_api_package_only_reexports():
    path = Path(plugin_api.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body

    kinds = {type(node).__name__ for node in body}
    assert kinds <= {"ImportFrom", "Assign"}
    assigned = [target.id for node in body if isinstance(node, ast.Assign) for target in node.targets]
    assert assigned == ["__all__"]
    assert sorted(p.name for p in path.parent.glob("*.py")) == ["__init__.py", "version.py"]


def test_plugin_api_imports_neither_nio_nor_agno():
    code = "import json, sys\nimport mindroom.plugin_api\nprint(json.dumps(sorted(sys.modules)))\n"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)

    modules = json.loads(out.stdout)
    assert "mindroom.plugin_api" in modules
    assert [m for m in modules if m.split(".")[0] in {"nio", "agno"}] == []


def test_plugin_api_star_import_gives_exactly_the_pinned_names():
    namespace = {}
    exec("from mindroom.plugin_api import *", namespace)

    assert set(namespace) - {"__builtins__"} == set(PINNED)


def test_hook_names_plugins_import_outside_plugin_api_stay_in_mindroom_hooks():
    hooks = importlib.import_module("mindroom.hooks")

    for name in (
        "HookMessageSender",
        "HookRoomStateQuerier",
        "HookRoomStatePutter",
        "HookContext",
        "CancelledResponseInfo",
        "HookMatrixAdmin",
    ):
        assert name in hooks.__all__
    assert importlib.import_module("mindroom.hooks.context").HookContext is hooks.HookContext
