"""`tool:environment`: per-call environment changes for the shell tool's commands, and how hooks' changes merge."""

import asyncio

import pytest

from mindroom.hooks import (
    EVENT_TOOL_ENVIRONMENT,
    HookContext,
    HookRegistry,
    ToolEnvironment,
    ToolEnvironmentChanges,
    ToolEnvironmentContext,
    hook,
    merge_tool_environment,
)
from mindroom.hooks.execution import emit_tool_environment
from tests.hooks.support import registry_of


def shell_call(**changes):
    values = {
        "function_name": "run_shell_command",
        "registered_toolkit": "shell",
        "arguments": {"command": "git status"},
        "agent_name": "code",
        "room_id": "!room:localhost",
        "requester_id": "@alice:localhost",
    }
    return ToolEnvironmentContext(**{**values, **changes})


# -- the spec's own example, verbatim -------------------------------------------------------------------


@hook("tool:environment")
async def scoped_token(ctx):
    if ctx.registered_toolkit == "shell":
        ctx.unset_env("AWS_SECRET_ACCESS_KEY")
        ctx.set_env("GIT_TERMINAL_PROMPT", "0")


@pytest.mark.asyncio
async def test_tool_environment_spec_example_runs_verbatim():
    env = await emit_tool_environment(registry_of(scoped_token), shell_call())

    assert dict(env.set_values) == {"GIT_TERMINAL_PROMPT": "0"}
    assert env.unset == frozenset({"AWS_SECRET_ACCESS_KEY"})
    command_env = env.apply({"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "s3cr3t"}, {})
    assert command_env == {"PATH": "/bin", "GIT_TERMINAL_PROMPT": "0"}


@pytest.mark.asyncio
async def test_tool_environment_spec_example_leaves_other_toolkits_alone():
    env = await emit_tool_environment(registry_of(scoped_token), shell_call(registered_toolkit=None))

    assert env.is_empty


# -- validation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "A B", "A=B", "A,B", "A\x00B", "\tA", 5, None])
@pytest.mark.parametrize("method", ["set_env", "unset_env", "pass_through"])
def test_tool_environment_rejects_bad_names(method, name):
    ctx = shell_call()
    args = (name, "v") if method == "set_env" else (name,)

    with pytest.raises(ValueError, match="environment variable name"):
        getattr(ctx, method)(*args)


def test_tool_environment_value_must_be_a_string_without_nul():
    ctx = shell_call()

    with pytest.raises(TypeError, match="str"):
        ctx.set_env("TOKEN", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        ctx.set_env("TOKEN", "a\x00b")


def test_tool_environment_path_cannot_be_unset_but_can_be_set():
    ctx = shell_call()

    with pytest.raises(ValueError, match="PATH"):
        ctx.unset_env("PATH")
    ctx.set_env("PATH", "/opt/bin:/bin")
    assert ctx.changes().env == (("PATH", "/opt/bin:/bin"),)


def test_tool_environment_context_has_only_what_the_call_is():
    ctx = shell_call()

    assert not isinstance(ctx, HookContext)
    for absent in ("state_root", "send_message", "query_room_state", "put_room_state", "thread_id", "session_id"):
        assert not hasattr(ctx, absent), absent
    assert ctx.hook_scope() == ("code", "!room:localhost")
    assert ctx.event_name == EVENT_TOOL_ENVIRONMENT


# -- merging --------------------------------------------------------------------------------------------


def test_tool_environment_merge_later_hook_wins_per_variable():
    env = merge_tool_environment(
        [
            ToolEnvironmentChanges(env=(("A", "1"), ("B", "1"))),
            ToolEnvironmentChanges(env=(("A", None),)),
            ToolEnvironmentChanges(env=(("B", "2"),)),
        ]
    )

    assert dict(env.set_values) == {"B": "2"}
    assert env.unset == frozenset({"A"})


def test_tool_environment_merge_explicit_set_or_unset_beats_pass_through_whatever_the_order():
    env = merge_tool_environment(
        [
            ToolEnvironmentChanges(env=(("AWS_REGION", "eu-1"),)),
            ToolEnvironmentChanges(pass_through=("AWS_*",)),
            ToolEnvironmentChanges(env=(("AWS_SECRET_ACCESS_KEY", None),)),
        ]
    )
    process = {"AWS_REGION": "us-1", "AWS_SECRET_ACCESS_KEY": "s", "AWS_PROFILE": "dev", "HOME": "/root"}

    assert env.apply({}, process) == {"AWS_REGION": "eu-1", "AWS_PROFILE": "dev"}


def test_tool_environment_merge_concatenates_pass_through_once_each():
    env = merge_tool_environment(
        [ToolEnvironmentChanges(pass_through=("A", "B*")), ToolEnvironmentChanges(pass_through=("B*", "C"))]
    )

    assert env.pass_through == ("A", "B*", "C")


def test_tool_environment_within_one_hook_the_last_change_counts():
    ctx = shell_call()
    ctx.set_env("X", "1")
    ctx.unset_env("X")
    ctx.set_env("Y", "2")
    ctx.set_env("X", "3")

    assert merge_tool_environment([ctx.changes()]).set_values == {"Y": "2", "X": "3"}


# -- the collector ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_tool_environment_hooks_merge_in_hook_order_even_when_they_finish_out_of_order():
    @hook(EVENT_TOOL_ENVIRONMENT, priority=1)
    async def slow_first(ctx):
        await asyncio.sleep(0.02)
        ctx.set_env("WHO", "first")

    @hook(EVENT_TOOL_ENVIRONMENT, priority=2)
    async def fast_second(ctx):
        ctx.set_env("WHO", "second")

    env = await emit_tool_environment(registry_of(slow_first, fast_second), shell_call())

    assert env.set_values == {"WHO": "second"}


@pytest.mark.asyncio
async def test_tool_environment_failing_or_timed_out_hooks_contribute_nothing():
    @hook(EVENT_TOOL_ENVIRONMENT, priority=1)
    async def broken(ctx):
        ctx.set_env("BROKEN", "1")
        raise RuntimeError("boom")

    @hook(EVENT_TOOL_ENVIRONMENT, priority=2, timeout_ms=20)
    async def slow(ctx):
        ctx.set_env("SLOW", "1")
        await asyncio.sleep(1)

    @hook(EVENT_TOOL_ENVIRONMENT, priority=3)
    async def fine(ctx):
        ctx.pass_through("LANG")
        return "ignored"

    env = await emit_tool_environment(registry_of(broken, slow, fine), shell_call())

    assert env == ToolEnvironment(env.set_values, frozenset(), ("LANG",))
    assert dict(env.set_values) == {}


@pytest.mark.asyncio
async def test_tool_environment_each_hook_gets_its_own_copy_of_the_arguments():
    seen = []

    @hook(EVENT_TOOL_ENVIRONMENT, priority=1)
    async def meddler(ctx):
        ctx.arguments["command"] = "rm -rf /"

    @hook(EVENT_TOOL_ENVIRONMENT, priority=2)
    async def reader(ctx):
        seen.append(ctx.arguments["command"])

    call = shell_call()
    await emit_tool_environment(registry_of(meddler, reader), call)

    assert seen == ["git status"]
    assert call.arguments == {"command": "git status"}


@pytest.mark.asyncio
async def test_tool_environment_without_hooks_is_empty():
    env = await emit_tool_environment(HookRegistry.empty(), shell_call())

    assert env.is_empty
    assert env.apply({"PATH": "/bin"}, {"SECRET": "x"}) == {"PATH": "/bin"}


@pytest.mark.asyncio
async def test_tool_environment_monitor_mode_changes_nothing():
    @hook(EVENT_TOOL_ENVIRONMENT)
    async def trial(ctx):
        ctx.set_env("A", "1")

    registry = registry_of(trial, hooks={"trial": {"mode": "monitor"}})

    assert (await emit_tool_environment(registry, shell_call())).is_empty
    assert registry.all_hooks()[0].stats.monitored_effects == 1
