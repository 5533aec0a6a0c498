"""The 2026 API's additions to the tool runtime context, and the tool-hook import path."""

import dataclasses

import pytest

from mindroom.hooks import EVENT_TOOL_ENVIRONMENT, HookRegistry, MessageTarget, hook
from mindroom.plugin_api import (
    ResolvedWorkerTarget,
    ToolRuntimeContext,
    ToolRuntimeHookBindings,
    build_execution_identity_from_runtime_context,
    get_tool_runtime_context,
    resolve_tool_runtime_hook_bindings,
)
from mindroom.tool_system.runtime_context import bind_runtime_context
from mindroom.tool_system.tool_hooks import bind_tool_environment, collect_tool_environment, current_tool_environment
from tests.hooks.support import stub_plugin


def runtime(**changes):
    values = {
        "registry": HookRegistry.empty(),
        "agent_name": "code",
        "room_id": "!room:localhost",
        "thread_id": "$root",
        "requester_id": "@alice:localhost",
        "session_id": "!room:localhost:$root",
    }
    return ToolRuntimeContext(**{**values, **changes})


def test_runtime_context_keeps_the_older_positional_shape_and_adds_fields():
    context = ToolRuntimeContext(HookRegistry.empty(), "helper", "!r", "$t")

    assert (context.agent_name, context.room_id, context.thread_id) == ("helper", "!r", "$t")
    assert context.hook_registry is context.registry
    assert (context.matrix_admin, context.message_received_depth, context.target) == (None, 0, None)
    assert context.resolved_thread_id == "$t"
    assert context.reply_to_event_id is None


def test_runtime_context_with_a_target_derives_the_newer_properties():
    context = runtime(target=MessageTarget("!room:localhost", None, "$root", "$event"))

    assert context.resolved_thread_id == "$root"
    assert context.reply_to_event_id == "$event"


def test_get_tool_runtime_context_is_the_bound_context():
    context = runtime()

    assert get_tool_runtime_context() is None
    with bind_runtime_context(context):
        assert get_tool_runtime_context() is context


@pytest.mark.asyncio
async def test_hook_bindings_resolve_from_the_runtime_context_and_are_frozen():
    sent = []

    async def sender(room_id, text, thread_id=None, extra_content=None):
        sent.append((room_id, text, thread_id, extra_content))
        return "$e"

    async def querier(room_id, event_type, state_key):
        return {"goal": "ship"}

    context = runtime(message_sender=sender, room_state_querier=querier, message_received_depth=1)
    bindings = resolve_tool_runtime_hook_bindings(context)

    assert isinstance(bindings, ToolRuntimeHookBindings)
    assert await bindings.room_state_querier("!r", "t", "k") == {"goal": "ship"}
    assert bindings.message_received_depth == 1
    assert (bindings.matrix_admin, bindings.room_state_putter) == (None, None)
    await bindings.message_sender("!r", "from a tool", "$t", "deep-research:report", None)
    assert sent[0][3]["com.mindroom.hook_source"] == "deep-research:report"
    with pytest.raises(dataclasses.FrozenInstanceError):
        bindings.message_received_depth = 5  # type: ignore[misc]


def test_execution_identity_from_the_runtime_context():
    identity = build_execution_identity_from_runtime_context(runtime(session_id=None))

    assert identity.channel == "matrix"
    assert (identity.agent_name, identity.requester_id, identity.room_id) == (
        "code",
        "@alice:localhost",
        "!room:localhost",
    )
    assert identity.session_id == "!room:localhost:$root"


def test_worker_target_is_this_process_and_refused_for_the_router():
    assert runtime().resolve_worker_target() == ResolvedWorkerTarget(routing_agent_name="code")
    with pytest.raises(ValueError, match="router"):
        runtime(agent_name="router").resolve_worker_target()


@pytest.mark.asyncio
async def test_collect_tool_environment_uses_the_bound_turn_and_binds_for_the_shell():
    seen = []

    @hook(EVENT_TOOL_ENVIRONMENT)
    async def env_hook(ctx):
        seen.append((ctx.agent_name, ctx.room_id, ctx.requester_id, ctx.correlation_id))
        ctx.set_env("GIT_TERMINAL_PROMPT", "0")

    registry = HookRegistry.from_plugins([stub_plugin("p", [env_hook])])
    with bind_runtime_context(runtime(registry=registry, correlation_id="corr-1")):
        environment = await collect_tool_environment("run_shell_command", "shell", {"command": "ls"}, "code")

    assert seen == [("code", "!room:localhost", "@alice:localhost", "corr-1")]
    assert current_tool_environment() is None
    with bind_tool_environment(environment):
        assert current_tool_environment().set_values == {"GIT_TERMINAL_PROMPT": "0"}
    assert current_tool_environment() is None


@pytest.mark.asyncio
async def test_collect_tool_environment_without_listeners_builds_nothing():
    environment = await collect_tool_environment("calculate", None, {}, "code")

    assert environment.is_empty


def test_get_plugin_state_root_for_older_plugins_tool_code(tmp_path):
    from mindroom.constants import RuntimePaths
    from mindroom.tool_system.runtime_context import get_plugin_state_root

    paths = RuntimePaths.for_directory(tmp_path)

    explicit = get_plugin_state_root("workloop", runtime_paths=paths)
    with bind_runtime_context(runtime(runtime_paths=paths)):
        bound = get_plugin_state_root("workloop")

    assert explicit == bound == paths.storage_root.resolve() / "plugins" / "workloop"
    assert explicit.is_dir()
    with pytest.raises(RuntimeError, match="runtime_paths"):
        get_plugin_state_root("workloop")
