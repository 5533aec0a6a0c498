"""Frozen events: each hook reads its own copy of the context; its writes reach no later hook and not the caller."""

import asyncio
import threading

import pytest

from mindroom.hooks import (
    EVENT_AGENT_STARTED,
    EVENT_AGENT_STOPPED,
    EVENT_BOT_READY,
    EVENT_CONFIG_RELOADED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_RECEIVED,
    EVENT_REACTION_RECEIVED,
    EVENT_TOOL_AFTER_CALL,
    AfterResponseContext,
    AgentLifecycleContext,
    ConfigReloadedContext,
    HookRegistry,
    MessageReceivedContext,
    ReactionReceivedContext,
    ResponseResult,
    ToolAfterCallContext,
    hook,
)
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin


def _other_result(ctx):
    return ResponseResult("rewritten", "$other", "edited", "system", ctx.envelope)


# event, how to build its context, the field a hook overwrites, the value it writes
FROZEN = [
    (EVENT_REACTION_RECEIVED, lambda: ReactionReceivedContext(reaction_key="👍"), "reaction_key", lambda ctx: "🛑"),
    (EVENT_AGENT_STARTED, lambda: AgentLifecycleContext(entity_name="code"), "entity_name", lambda ctx: "evil"),
    (
        EVENT_AGENT_STOPPED,
        lambda: AgentLifecycleContext(event_name=EVENT_AGENT_STOPPED, entity_name="code"),
        "stop_reason",
        lambda ctx: "hijacked",
    ),
    (
        EVENT_BOT_READY,
        lambda: AgentLifecycleContext(event_name=EVENT_BOT_READY, entity_name="code", rooms=("!a",)),
        "rooms",
        lambda ctx: ("!b",),
    ),
    (
        EVENT_CONFIG_RELOADED,
        lambda: ConfigReloadedContext(added_entities=("a",)),
        "added_entities",
        lambda ctx: ("x", "y"),
    ),
    (EVENT_MESSAGE_AFTER_RESPONSE, AfterResponseContext, "result", _other_result),
]


@pytest.mark.parametrize(("event", "build", "field", "write"), FROZEN, ids=[row[0] for row in FROZEN])
@pytest.mark.parametrize("writer_fails", [False, True])
@pytest.mark.asyncio
async def test_frozen_context_writes_reach_neither_the_next_hook_nor_the_caller(
    event, build, field, write, writer_fails
):
    seen = []

    @hook(event, name="writer", priority=1)
    async def writer(ctx):
        setattr(ctx, field, write(ctx))
        await asyncio.sleep(0)
        seen.append(("writer", getattr(ctx, field)))
        if writer_fails:
            raise RuntimeError("after writing")

    @hook(event, name="reader", priority=2)
    async def reader(ctx):
        seen.append(("reader", getattr(ctx, field)))

    ctx = build()
    original = getattr(ctx, field)
    registry = HookRegistry.from_plugins([stub_plugin("p", [writer, reader])])

    await emit(registry, event, ctx)

    assert seen[0][0] == "writer"
    assert seen[0][1] != original  # a hook may still use its own copy as scratch space
    assert seen[1] == ("reader", original)
    assert getattr(ctx, field) == original


@pytest.mark.parametrize(("event", "build", "field", "write"), FROZEN, ids=[row[0] for row in FROZEN])
@pytest.mark.asyncio
async def test_frozen_context_hooks_still_get_their_own_plugin_settings(event, build, field, write):
    seen = {}

    @hook(event, name="one")
    async def one(ctx):
        seen["one"] = (ctx.plugin_name, ctx.hook_name, ctx.settings.get("key"))

    @hook(event, name="two")
    async def two(ctx):
        seen["two"] = (ctx.plugin_name, ctx.hook_name, ctx.settings.get("key"))

    registry = HookRegistry.from_plugins(
        [stub_plugin("a", [one], settings={"key": "A"}), stub_plugin("b", [two], settings={"key": "B"})]
    )
    await emit(registry, event, build())

    assert seen == {"one": ("a", "one", "A"), "two": ("b", "two", "B")}


@pytest.mark.asyncio
async def test_frozen_does_not_apply_to_events_with_mutable_fields():
    @hook(EVENT_MESSAGE_RECEIVED)
    async def suppress(ctx):
        ctx.suppress = True

    ctx = MessageReceivedContext()
    await emit(HookRegistry.from_plugins([stub_plugin("p", [suppress])]), EVENT_MESSAGE_RECEIVED, ctx)

    assert ctx.suppress is True


def _tool_after_ctx(result):
    return ToolAfterCallContext(
        tool_name="read_file",
        arguments={"path": "notes.txt", "options": {"lines": [1, 2]}},
        agent_name="code",
        room_id="!r:l",
        result=result,
        duration_ms=3.0,
    )


@pytest.mark.asyncio
async def test_frozen_tool_after_call_observers_each_get_their_own_snapshot():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL, name="meddler", priority=1)
    async def meddler(ctx):
        ctx.result.append("injected")
        ctx.result[0]["text"] = "changed"
        ctx.arguments["path"] = "/etc/shadow"
        ctx.arguments["options"]["lines"].append(99)

    @hook(EVENT_TOOL_AFTER_CALL, name="auditor", priority=2)
    async def auditor(ctx):
        seen.append((ctx.result, ctx.arguments))

    result = [{"text": "hello"}]
    ctx = _tool_after_ctx(result)
    arguments = ctx.arguments
    registry = HookRegistry.from_plugins([stub_plugin("p", [meddler, auditor])])

    await emit(registry, EVENT_TOOL_AFTER_CALL, ctx)

    assert seen == [([{"text": "hello"}], {"path": "notes.txt", "options": {"lines": [1, 2]}})]
    assert result == [{"text": "hello"}]
    assert ctx.result is result
    assert ctx.arguments is arguments
    assert arguments == {"path": "notes.txt", "options": {"lines": [1, 2]}}


class _Handle:
    """A tool result that cannot be copied (it holds a lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.notes = []


@pytest.mark.asyncio
async def test_frozen_tool_after_call_uncopyable_result_is_passed_as_is():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL)
    async def observer(ctx):
        seen.append(ctx.result)

    handle = _Handle()
    registry = HookRegistry.from_plugins([stub_plugin("p", [observer])])
    await emit(registry, EVENT_TOOL_AFTER_CALL, _tool_after_ctx(handle))

    assert seen == [handle]
    assert registry.hooks_for(EVENT_TOOL_AFTER_CALL)[0].stats.failures == 0


def test_frozen_hook_copy_of_tool_after_call_is_deep_for_json_shaped_data():
    ctx = _tool_after_ctx({"rows": [{"a": 1}], "total": 1})

    copy = ctx.hook_copy()
    copy.result["rows"][0]["a"] = 2
    copy.arguments["options"]["lines"].clear()

    assert ctx.result == {"rows": [{"a": 1}], "total": 1}
    assert ctx.arguments["options"]["lines"] == [1, 2]
    assert (copy.tool_name, copy.agent_name, copy.duration_ms) == ("read_file", "code", 3.0)
