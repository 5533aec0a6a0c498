"""The `hook_context_factory` fixture: every point of TESTING-KIT.md."""

import dataclasses
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.constants import ORIGINAL_SENDER_KEY
from mindroom.hooks import (
    AfterResponseContext,
    AgentLifecycleContext,
    BeforeResponseContext,
    ConfigReloadedContext,
    CustomEventContext,
    HookContext,
    HookRegistry,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ReactionReceivedContext,
    ScheduleFiredContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from mindroom.testing import CONTEXT_TYPES
from tests.hooks.support import stub_plugin

DEFAULT_EVENTS = {
    MessageReceivedContext: "message:received",
    MessageEnrichContext: "message:enrich",
    BeforeResponseContext: "message:before_response",
    AfterResponseContext: "message:after_response",
    AgentLifecycleContext: "agent:started",
    ScheduleFiredContext: "schedule:fired",
    ReactionReceivedContext: "reaction:received",
    ConfigReloadedContext: "config:reloaded",
    ToolBeforeCallContext: "tool:before_call",
    ToolAfterCallContext: "tool:after_call",
}
MESSAGE_CONTEXTS = [MessageReceivedContext, MessageEnrichContext, BeforeResponseContext, AfterResponseContext]


# -- context_type --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [*DEFAULT_EVENTS, CustomEventContext])
def test_hook_context_factory_accepts_class_and_class_name(hook_context_factory, cls):
    by_class = hook_context_factory(cls)
    by_name = hook_context_factory(cls.__name__)

    assert type(by_class) is cls
    assert type(by_name) is cls


def test_hook_context_factory_knows_every_spec_context(hook_context_factory):
    assert set(CONTEXT_TYPES) >= {cls.__name__ for cls in DEFAULT_EVENTS} | {"CustomEventContext"}


def test_hook_context_factory_unknown_type_name_raises(hook_context_factory):
    with pytest.raises(TypeError, match="NoSuchContext"):
        hook_context_factory("NoSuchContext")


def test_hook_context_factory_non_context_class_raises(hook_context_factory):
    with pytest.raises(TypeError):
        hook_context_factory(dict)


def test_hook_context_factory_returns_new_context_each_call(hook_context_factory):
    first = hook_context_factory(MessageReceivedContext)
    second = hook_context_factory(MessageReceivedContext)
    first.suppress = True
    first.settings["x"] = 1

    assert first is not second
    assert second.suppress is False
    assert second.settings == {}


# -- base fields ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "event"), DEFAULT_EVENTS.items())
def test_hook_context_factory_event_name_defaults_to_own_event(hook_context_factory, cls, event):
    assert hook_context_factory(cls).event_name == event


def test_hook_context_factory_event_name_can_be_set(hook_context_factory):
    ctx = hook_context_factory(AgentLifecycleContext, event_name="bot:ready")

    assert ctx.event_name == "bot:ready"


def test_hook_context_factory_base_field_defaults(hook_context_factory):
    ctx = hook_context_factory(MessageReceivedContext)

    assert ctx.plugin_name == ""
    assert ctx.settings == {}
    assert isinstance(ctx.correlation_id, str)
    assert ctx.correlation_id


def test_hook_context_factory_base_fields_can_be_set(hook_context_factory):
    ctx = hook_context_factory(MessageReceivedContext, plugin_name="demo", settings={"k": "v"}, correlation_id="c-1")

    assert (ctx.plugin_name, ctx.settings, ctx.correlation_id) == ("demo", {"k": "v"}, "c-1")


def test_hook_context_factory_correlation_ids_are_fresh_and_unique(hook_context_factory):
    ids = {hook_context_factory(cls).correlation_id for cls in DEFAULT_EVENTS for _ in range(3)}

    assert len(ids) == 3 * len(DEFAULT_EVENTS)


@pytest.mark.parametrize(("cls", "event"), [*DEFAULT_EVENTS.items(), (CustomEventContext, "todo:done")])
def test_hook_context_factory_logger_is_bound_with_event_name(hook_context_factory, cls, event):
    ctx = hook_context_factory(cls, event_name=event) if cls is CustomEventContext else hook_context_factory(cls)

    with capture_logs() as logs:
        ctx.logger.info("hello from a hook", extra_field=1)

    (entry,) = logs
    assert entry["event"] == "hello from a hook"
    assert entry["event_name"] == event
    assert entry["extra_field"] == 1


# -- message fields ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", MESSAGE_CONTEXTS)
def test_hook_context_factory_message_defaults(hook_context_factory, cls):
    env = hook_context_factory(cls).envelope

    assert isinstance(env, MessageEnvelope)
    assert env.body == "hello"
    assert env.room_id == "!room:localhost"
    assert env.agent_name == "code"
    assert env.requester_id == "@user:localhost"
    assert env.sender_id == "@user:localhost"
    assert env.thread_id is None
    assert env.resolved_thread_id is None
    assert env.attachment_ids == ()
    assert env.mentioned_agents == ()


@pytest.mark.parametrize("cls", MESSAGE_CONTEXTS)
def test_hook_context_factory_flat_message_fields_land_in_envelope(hook_context_factory, cls):
    fields = {
        "body": "buy spam now",
        "room_id": "!lab:localhost",
        "thread_id": "$thread",
        "resolved_thread_id": "$root",
        "requester_id": "@alice:localhost",
        "sender_id": "@mindroom_router:localhost",
        "agent_name": "research",
        "source_kind": "voice",
        "source_event_id": "$src",
        "attachment_ids": ["att-1", "att-2"],
        "mentioned_agents": ["research"],
    }
    ctx = hook_context_factory(cls, **fields)

    env = ctx.envelope
    assert {name: getattr(env, name) for name in fields} == {
        **fields,
        "attachment_ids": ("att-1", "att-2"),
        "mentioned_agents": ("research",),
    }
    assert env.target.resolved_thread_id == "$root"
    assert ctx.hook_scope() == ("research", "!lab:localhost")


def test_hook_context_factory_sender_id_defaults_to_requester(hook_context_factory):
    env = hook_context_factory(MessageReceivedContext, requester_id="@bob:localhost").envelope

    assert env.sender_id == "@bob:localhost"


def test_hook_context_factory_draft_and_result_share_the_envelope(hook_context_factory):
    before = hook_context_factory(BeforeResponseContext, body="question", thread_id="$t")
    after = hook_context_factory(AfterResponseContext, body="question", thread_id="$t")

    assert before.draft.envelope == before.envelope
    assert before.draft.envelope.body == "question"
    assert after.result.envelope == after.envelope
    assert after.result.envelope.thread_id == "$t"


def test_hook_context_factory_explicit_envelope_is_used(hook_context_factory):
    env = hook_context_factory(MessageReceivedContext, body="explicit").envelope

    ctx = hook_context_factory(MessageEnrichContext, envelope=env)

    assert ctx.envelope is env


@pytest.mark.parametrize("cls", [ToolBeforeCallContext, ToolAfterCallContext])
def test_hook_context_factory_tool_contexts_take_same_named_fields(hook_context_factory, cls):
    default = hook_context_factory(cls)
    ctx = hook_context_factory(
        cls, agent_name="research", room_id="!lab:localhost", thread_id="$t", requester_id="@alice:localhost"
    )

    assert (default.agent_name, default.room_id, default.requester_id) == ("code", "!room:localhost", "@user:localhost")
    assert default.thread_id is None
    assert (ctx.agent_name, ctx.room_id, ctx.thread_id, ctx.requester_id) == (
        "research",
        "!lab:localhost",
        "$t",
        "@alice:localhost",
    )


@pytest.mark.parametrize("cls", [ScheduleFiredContext, ReactionReceivedContext])
def test_hook_context_factory_schedule_and_reaction_take_room_and_thread(hook_context_factory, cls):
    default = hook_context_factory(cls)
    ctx = hook_context_factory(cls, room_id="!lab:localhost", thread_id="$t")

    assert (default.room_id, default.thread_id) == ("!room:localhost", None)
    assert (ctx.room_id, ctx.thread_id) == ("!lab:localhost", "$t")


@pytest.mark.parametrize("cls", [ScheduleFiredContext, ReactionReceivedContext, CustomEventContext])
def test_hook_context_factory_agent_name_defaults_to_code_everywhere(hook_context_factory, cls):
    assert hook_context_factory(cls).agent_name == "code"


def test_hook_context_factory_lifecycle_agent_name(hook_context_factory):
    assert hook_context_factory(AgentLifecycleContext).agent_name == "code"
    assert hook_context_factory(AgentLifecycleContext, agent_name="research").entity_name == "research"


# -- per-type fields -----------------------------------------------------------------------------------------


def test_hook_context_factory_before_response_draft_fields(hook_context_factory):
    default = hook_context_factory(BeforeResponseContext)
    ctx = hook_context_factory(BeforeResponseContext, response_text="Hello", response_kind="team")

    assert default.draft.suppress is False
    assert default.draft.response_kind == "ai"
    assert (ctx.draft.response_text, ctx.draft.response_kind) == ("Hello", "team")


def test_hook_context_factory_after_response_result_fields(hook_context_factory):
    ctx = hook_context_factory(
        AfterResponseContext,
        response_text="Done",
        response_event_id="$resp",
        delivery_kind="edited",
        response_kind="router",
    )

    result = ctx.result
    assert (result.response_text, result.response_event_id, result.delivery_kind, result.response_kind) == (
        "Done",
        "$resp",
        "edited",
        "router",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.response_text = "x"


def test_hook_context_factory_tool_fields(hook_context_factory):
    error = RuntimeError("x")
    before = hook_context_factory(ToolBeforeCallContext, tool_name="shell", arguments={"cmd": "ls"}, session_id="s")
    after = hook_context_factory(
        ToolAfterCallContext,
        tool_name="shell",
        arguments={"cmd": "ls"},
        session_id="s",
        result="output",
        error=error,
        blocked=True,
        duration_ms=12.5,
    )

    assert (before.tool_name, before.arguments, before.session_id) == ("shell", {"cmd": "ls"}, "s")
    assert (before.declined, before.decline_reason) == (False, "")
    assert (after.result, after.error, after.blocked, after.duration_ms) == ("output", error, True, 12.5)


def test_hook_context_factory_schedule_reaction_and_custom_fields(hook_context_factory):
    schedule = hook_context_factory(ScheduleFiredContext, message_text="standup time")
    reaction = hook_context_factory(ReactionReceivedContext, reaction_key="\U0001f4cc", target_event_id="$target")
    custom = hook_context_factory("CustomEventContext", event_name="todo:item_completed", payload={"item_id": "123"})

    assert schedule.message_text == "standup time"
    assert (reaction.reaction_key, reaction.target_event_id) == ("\U0001f4cc", "$target")
    assert custom.payload == {"item_id": "123"}
    assert custom.event_name == "todo:item_completed"


def test_hook_context_factory_custom_event_payload_defaults_to_empty_dict(hook_context_factory):
    assert hook_context_factory(CustomEventContext).payload == {}


# -- unknown keywords ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "keyword"),
    [
        (MessageReceivedContext, "bodyy"),
        (MessageReceivedContext, "response_text"),
        (ToolBeforeCallContext, "body"),
        (AgentLifecycleContext, "payload"),
        ("CustomEventContext", "reaction_key"),
    ],
)
def test_hook_context_factory_unknown_keyword_raises_type_error_naming_it(hook_context_factory, cls, keyword):
    with pytest.raises(TypeError, match=keyword):
        hook_context_factory(cls, **{keyword: "x"})


# -- message sender and room state -------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [*DEFAULT_EVENTS, CustomEventContext])
@pytest.mark.asyncio
async def test_hook_context_factory_message_sender_is_bound(hook_context_factory, cls):
    sent = []

    async def sender(room_id, text, *, thread_id=None, extra_content=None, **_):
        sent.append((room_id, text, thread_id, extra_content))
        return "$event"

    ctx = hook_context_factory(cls, message_sender=sender)
    event_id = await ctx.send_message("!room:localhost", "hi", thread_id="$t", extra_content={"k": 1})

    assert event_id == "$event"
    ((room_id, text, thread_id, extra),) = sent
    assert (room_id, text, thread_id) == ("!room:localhost", "hi", "$t")
    assert extra["k"] == 1


@pytest.mark.asyncio
async def test_hook_context_factory_message_sender_gets_original_sender(hook_context_factory):
    sent = []

    async def sender(*args, **kwargs):
        sent.append(kwargs["extra_content"])
        return "$e"

    ctx = hook_context_factory(MessageReceivedContext, requester_id="@alice:localhost", message_sender=sender)
    await ctx.send_message("!room:localhost", "hi")

    assert sent[0][ORIGINAL_SENDER_KEY] == "@alice:localhost"


@pytest.mark.parametrize("cls", [*DEFAULT_EVENTS, CustomEventContext])
@pytest.mark.asyncio
async def test_hook_context_factory_without_sender_helpers_return_spec_defaults(hook_context_factory, cls):
    ctx = hook_context_factory(cls)

    assert await ctx.send_message("!room:localhost", "hi") is None
    assert await ctx.query_room_state("!room:localhost", "m.room.topic", "") is None
    assert await ctx.query_room_state("!room:localhost", "m.room.topic") is None
    assert await ctx.put_room_state("!room:localhost", "com.example", "", {}) is False


# -- state_root -------------------------------------------------------------------------------------------------


def test_hook_context_factory_state_root_shared_data_dir_per_test(hook_context_factory, tmp_path):
    first = hook_context_factory(MessageReceivedContext, plugin_name="alpha")
    second = hook_context_factory(ToolBeforeCallContext, plugin_name="beta")
    third = hook_context_factory(AgentLifecycleContext, plugin_name="alpha")

    assert first.state_root.name == "alpha"
    assert first.state_root.parent.name == "plugins"
    assert first.state_root.parent == second.state_root.parent
    assert first.state_root == third.state_root
    assert first.state_root.is_dir()
    assert tmp_path.resolve() in first.state_root.parents


@pytest.mark.asyncio
async def test_hook_context_factory_state_root_of_emitted_context(hook_context_factory):
    written = []

    @hook("message:received")
    async def remember(ctx):
        path = ctx.state_root / "seen.txt"
        path.write_text(ctx.envelope.body)
        written.append(path)

    registry = HookRegistry.from_plugins([stub_plugin("memory", [remember])])
    await emit(registry, "message:received", hook_context_factory(MessageReceivedContext, body="remember me"))

    (path,) = written
    assert path.read_text() == "remember me"
    assert path.parent == hook_context_factory(MessageReceivedContext, plugin_name="memory").state_root


def test_hook_context_factory_state_root_data_dirs_differ_between_tests(hook_context_factory, tmp_path):
    # Each test's data directory is inside that test's own tmp_path, so nothing leaks between tests.
    ctx = hook_context_factory(MessageReceivedContext, plugin_name="isolated")

    assert not (ctx.state_root / "seen.txt").exists()
    assert Path(tmp_path).resolve() in ctx.state_root.parents


# -- ready to emit ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", list(DEFAULT_EVENTS))
@pytest.mark.asyncio
async def test_hook_context_factory_contexts_are_ready_to_emit(hook_context_factory, cls):
    seen = []
    event = DEFAULT_EVENTS[cls]

    @hook(event, agents=["code"], rooms=["!room:localhost"])
    async def record(ctx):
        seen.append(ctx.event_name)

    registry = HookRegistry.from_plugins([stub_plugin("demo", [record])])
    ctx = hook_context_factory(cls)
    if event == "message:enrich":
        await emit_collect(registry, event, ctx)
    elif event == "message:before_response":
        await emit_transform(registry, event, ctx)
    elif event == "tool:before_call":
        await emit_gate(registry, event, ctx)
    else:
        await emit(registry, event, ctx)

    # Lifecycle and config events belong to no room, so the room filter keeps the hook out there.
    expected = [] if cls in (AgentLifecycleContext, ConfigReloadedContext) else [event]
    assert seen == expected


def test_hook_context_factory_result_is_a_hook_context(hook_context_factory):
    assert all(isinstance(hook_context_factory(cls), HookContext) for cls in DEFAULT_EVENTS)
