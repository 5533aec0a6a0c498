"""`ToolRuntimeContext` built with either API generation's keywords, as plugins and their own tests build it."""

from __future__ import annotations

import dataclasses

import pytest

from mindroom.constants import RuntimePaths
from mindroom.hooks import HookRegistry, MessageTarget, hook
from mindroom.tool_system.runtime_context import (
    MINDROOM_ONLY_KEYWORDS,
    ToolRuntimeContext,
    bind_runtime_context,
    build_execution_identity_from_runtime_context,
    emit_custom_event,
    get_tool_runtime_context,
    resolve_tool_runtime_hook_bindings,
    tool_runtime_context,
)
from tests.hooks.support import stub_plugin

TARGET = MessageTarget(
    room_id="!room:localhost",
    source_thread_id="$thread-root",
    resolved_thread_id="$thread-root",
    reply_to_event_id="$event",
    session_id="session-1",
)


class Client:
    """Stands for the raw Matrix client MindRoom's constructor takes (never used here)."""


def test_runtime_context_takes_mindroom_2026_keywords_and_derives_the_conversation_from_the_target(tmp_path):
    async def sender(room_id, text, thread_id=None, extra_content=None):
        return "$sent"

    registry = HookRegistry.empty()
    client = Client()
    context = ToolRuntimeContext(
        agent_name="code",
        target=TARGET,
        requester_id="@user:localhost",
        client=client,
        config={"agents": {}},
        runtime_paths=RuntimePaths.for_directory(tmp_path),
        conversation_reader=object(),
        relations=object(),
        hook_registry=registry,
        hook_message_sender=sender,
        correlation_id="corr-1",
        active_model_name="default",
        storage_path=tmp_path,
    )

    assert context.registry is registry and context.hook_registry is registry
    assert (context.room_id, context.thread_id, context.session_id) == ("!room:localhost", "$thread-root", "session-1")
    assert (context.resolved_thread_id, context.reply_to_event_id) == ("$thread-root", "$event")
    assert context.current_config == {"agents": {}} and context.recipient == "code"
    assert context.unused_fields["client"] is client
    identity = build_execution_identity_from_runtime_context(context)
    assert (identity.room_id, identity.thread_id) == ("!room:localhost", "$thread-root")
    assert identity.session_id == "session-1"
    assert resolve_tool_runtime_hook_bindings(context).message_sender is not None


@pytest.mark.asyncio
async def test_runtime_context_hook_message_sender_is_the_sender_tools_use():
    sent = []

    async def sender(room_id, text, thread_id=None, extra_content=None):
        sent.append((room_id, text, thread_id))
        return "$sent"

    context = ToolRuntimeContext(agent_name="code", target=TARGET, hook_message_sender=sender)

    await resolve_tool_runtime_hook_bindings(context).message_sender("!room:localhost", "hi", "$thread-root")
    assert sent == [("!room:localhost", "hi", "$thread-root")]


def test_runtime_context_takes_the_keywords_earlier_releases_took():
    """thread-goal's and deep-research's tests still pass `event_cache` and `conversation_cache`."""
    context = ToolRuntimeContext(
        agent_name="code",
        target=TARGET,
        requester_id="@user:localhost",
        client=Client(),
        config=None,
        runtime_paths=None,
        event_cache=object(),
        conversation_cache=object(),
        room_state_querier=None,
        room_state_putter=None,
    )

    assert context.room_id == "!room:localhost"
    assert set(context.unused_fields) == {"client", "event_cache", "conversation_cache"}


def test_runtime_context_own_fields_win_over_the_targets():
    context = ToolRuntimeContext(HookRegistry.empty(), "code", "!other:localhost", "$t", target=TARGET)

    assert (context.room_id, context.thread_id, context.session_id) == ("!other:localhost", "$t", "session-1")


def test_runtime_context_without_a_registry_has_an_empty_one():
    context = ToolRuntimeContext(agent_name="code")

    assert len(context.registry) == 0
    assert (context.room_id, context.target, context.calls, dict(context.unused_fields)) == (None, None, [], {})


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        pytest.param({"made_up": 1}, "unexpected keyword arguments: made_up", id="unknown-keyword"),
        pytest.param(
            {"registry": HookRegistry.empty(), "hook_registry": HookRegistry.empty()},
            "both registry= and hook_registry=",
            id="two-registries",
        ),
    ],
)
def test_runtime_context_refuses_keywords_it_does_not_know(keywords, message):
    with pytest.raises(TypeError, match=message):
        ToolRuntimeContext(agent_name="code", **keywords)


def test_runtime_context_is_frozen_and_replace_keeps_every_field():
    context = ToolRuntimeContext(agent_name="code", target=TARGET, client=Client(), message_received_depth=2)

    changed = dataclasses.replace(context, agent_name="research")

    assert (changed.agent_name, changed.room_id, changed.message_received_depth) == ("research", "!room:localhost", 2)
    assert changed.unused_fields == context.unused_fields and changed.calls is context.calls
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.agent_name = "x"  # type: ignore[misc]


def test_runtime_context_mindroom_only_keywords_are_the_documented_ones():
    assert {"client", "conversation_reader", "relations", "orchestrator", "storage_path"} <= MINDROOM_ONLY_KEYWORDS
    assert not MINDROOM_ONLY_KEYWORDS & {f.name for f in dataclasses.fields(ToolRuntimeContext)}


@pytest.mark.asyncio
async def test_runtime_context_built_the_2026_way_carries_custom_events_to_its_registry():
    heard = []

    @hook("todo:changed")
    async def listen(ctx):
        heard.append((ctx.payload, ctx.agent_name, ctx.room_id))

    registry = HookRegistry.from_plugins([stub_plugin("todo", [listen])])
    context = ToolRuntimeContext(agent_name="code", target=TARGET, hook_registry=registry)

    with bind_runtime_context(context):
        await emit_custom_event("todo", "todo:changed", {"n": 1})

    assert heard == [({"n": 1}, "code", "!room:localhost")]


def test_tool_runtime_context_binds_for_the_block_and_none_binds_nothing():
    """thread-goal's tests bind with MindRoom's `tool_runtime_context(ctx)`, and `(None)` for no context."""
    context = ToolRuntimeContext(agent_name="code", target=TARGET)

    with tool_runtime_context(context):
        assert get_tool_runtime_context() is context
        with tool_runtime_context(None):
            assert get_tool_runtime_context() is None
        assert get_tool_runtime_context() is context
    assert get_tool_runtime_context() is None
