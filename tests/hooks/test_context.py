"""Hook contexts: base fields, `state_root`, `send_message`, room state helpers, transport objects."""

import dataclasses
import json
from pathlib import Path

import pytest

from mindroom.constants import ORIGINAL_SENDER_KEY, SYNTHETIC_DEPTH_KEY, RuntimePaths
from mindroom.errors import PluginStateError
from mindroom.hooks import (
    EVENT_MESSAGE_RECEIVED,
    EVENT_REACTION_RECEIVED,
    AfterResponseContext,
    AgentLifecycleContext,
    BeforeResponseContext,
    ConfigReloadedContext,
    CustomEventContext,
    HookBindings,
    HookRegistry,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ReactionReceivedContext,
    ResponseDraft,
    ResponseResult,
    ResponseUsage,
    ScheduleFiredContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    ToolTraceEntry,
    hook,
)
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin


def envelope(**overrides):
    values = {
        "source_event_id": "$event",
        "room_id": "!room:localhost",
        "thread_id": "$thread",
        "resolved_thread_id": "$thread",
        "requester_id": "@alice:localhost",
        "sender_id": "@mindroom_router:localhost",
        "body": "hello",
        "attachment_ids": (),
        "mentioned_agents": ("code",),
        "agent_name": "code",
        "source_kind": "message",
    }
    values.update(overrides)
    return MessageEnvelope(**values)


class Recorder:
    """A message sender that records what it was asked to send."""

    def __init__(self, result="$sent"):
        self.sent = []
        self.result = result

    async def __call__(self, room_id, text, *, thread_id=None, extra_content=None):
        self.sent.append({"room_id": room_id, "text": text, "thread_id": thread_id, "extra_content": extra_content})
        return self.result


# -- state_root -------------------------------------------------------------------------------------------


def test_context_state_root_created_on_first_access(tmp_path):
    paths = RuntimePaths(config_path=tmp_path / "config.yaml", storage_root=tmp_path / "data")
    ctx = MessageReceivedContext(plugin_name="my-plugin", runtime_paths=paths)
    expected = (tmp_path / "data" / "plugins" / "my-plugin").resolve()

    assert not expected.exists()
    root = ctx.state_root

    assert root == expected
    assert root.is_dir()
    assert ctx.state_root == expected


def test_context_state_root_without_runtime_paths_ignores_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDROOM_STORAGE_PATH", str(tmp_path / "env-data"))
    monkeypatch.chdir(tmp_path)
    ctx = AgentLifecycleContext(plugin_name="envy")

    expected = RuntimePaths.for_directory(tmp_path).plugins_state_root / "envy"
    assert ctx.state_root == expected.resolve()
    assert ctx.state_root.is_dir()
    assert not (tmp_path / "env-data").exists()


def test_context_state_root_default_data_dir_is_mindroom_data(tmp_path, monkeypatch):
    monkeypatch.delenv("MINDROOM_STORAGE_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    ctx = AgentLifecycleContext(plugin_name="plain")

    assert ctx.state_root == (tmp_path / "mindroom_data" / "plugins" / "plain").resolve()


def test_context_state_root_separate_per_plugin(tmp_path):
    paths = RuntimePaths.for_directory(tmp_path)

    one = MessageReceivedContext(plugin_name="one", runtime_paths=paths).state_root
    two = MessageReceivedContext(plugin_name="two", runtime_paths=paths).state_root

    assert one != two
    assert one.parent == two.parent == paths.plugins_state_root.resolve()


@pytest.mark.parametrize("name", ["", "..", "../evil", "a/b", "a\\b", ".hidden", "-dash", "evil\n", "x" * 129, "/abs"])
def test_context_state_root_refuses_unsafe_plugin_names(tmp_path, name):
    ctx = MessageReceivedContext(plugin_name=name, runtime_paths=RuntimePaths.for_directory(tmp_path))

    with pytest.raises(PluginStateError):
        ctx.state_root
    assert not (tmp_path / "evil").exists()


def test_context_state_root_error_is_a_value_error(tmp_path):
    ctx = MessageReceivedContext(plugin_name="../x", runtime_paths=RuntimePaths.for_directory(tmp_path))

    with pytest.raises(ValueError, match="invalid plugin name"):
        ctx.state_root


@pytest.mark.asyncio
async def test_context_state_root_in_spec_pin_example(hook_context_factory):
    @hook(EVENT_REACTION_RECEIVED)
    async def pin_message(ctx):
        if ctx.reaction_key != "\U0001f4cc":
            return
        pins_file = ctx.state_root / "pins.json"
        pins = json.loads(pins_file.read_text()) if pins_file.exists() else []
        pins.append({"room": ctx.room_id, "event": ctx.target_event_id})
        pins_file.write_text(json.dumps(pins))

    registry = HookRegistry.from_plugins([stub_plugin("pinboard", [pin_message])])
    for key, target in [("\U0001f4cc", "$a"), ("👍", "$b"), ("\U0001f4cc", "$c")]:
        ctx = hook_context_factory(ReactionReceivedContext, reaction_key=key, target_event_id=target)
        await emit(registry, EVENT_REACTION_RECEIVED, ctx)

    pins_file = ctx.state_root / "pins.json"
    assert ctx.state_root.name == "pinboard"
    assert ctx.state_root.parent.name == "plugins"
    assert json.loads(pins_file.read_text()) == [
        {"room": "!room:localhost", "event": "$a"},
        {"room": "!room:localhost", "event": "$c"},
    ]


# -- base fields ------------------------------------------------------------------------------------------


def test_context_direct_construction_without_base_fields():
    ctx = ToolBeforeCallContext(
        tool_name="shell",
        arguments={"command": "ls"},
        agent_name="code",
        room_id="!room:localhost",
        thread_id=None,
        requester_id="@alice:localhost",
        session_id="s1",
    )

    assert ctx.event_name == "tool:before_call"
    assert ctx.plugin_name == ""
    assert ctx.settings == {}
    assert ctx.config is None
    assert ctx.logger is not None
    assert ctx.correlation_id
    assert (ctx.declined, ctx.decline_reason) == (False, "")


def test_context_correlation_ids_are_unique():
    ids = {MessageReceivedContext().correlation_id for _ in range(50)}

    assert len(ids) == 50


@pytest.mark.parametrize(
    ("cls", "event"),
    [
        (MessageReceivedContext, "message:received"),
        (MessageEnrichContext, "message:enrich"),
        (BeforeResponseContext, "message:before_response"),
        (AfterResponseContext, "message:after_response"),
        (AgentLifecycleContext, "agent:started"),
        (ScheduleFiredContext, "schedule:fired"),
        (ReactionReceivedContext, "reaction:received"),
        (ConfigReloadedContext, "config:reloaded"),
        (ToolBeforeCallContext, "tool:before_call"),
        (ToolAfterCallContext, "tool:after_call"),
    ],
)
def test_context_default_event_name(cls, event):
    assert cls().event_name == event


def test_context_explicit_event_name_wins():
    assert AgentLifecycleContext(event_name="bot:ready").event_name == "bot:ready"


def test_context_settings_default_not_shared():
    first, second = MessageReceivedContext(), MessageReceivedContext()
    first.settings["x"] = 1

    assert second.settings == {}


def test_context_agent_lifecycle_agent_name_alias():
    assert AgentLifecycleContext(entity_name="code").agent_name == "code"


# -- transport objects --------------------------------------------------------------------------------------


def test_context_envelope_spec_defaults_and_target():
    env = envelope(thread_id=None, resolved_thread_id="$root")

    assert env.hook_source is None
    assert env.message_received_depth == 0
    assert env.target.room_id == "!room:localhost"
    assert env.target.thread_id is None
    assert env.target.resolved_thread_id == "$root"
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.body = "changed"


def test_context_message_contexts_expose_envelope_target():
    ctx = MessageEnrichContext(envelope=envelope())

    assert ctx.envelope.target.resolved_thread_id == "$thread"


def test_context_response_draft_is_mutable_with_defaults():
    draft = ResponseDraft(
        response_text="hi", response_kind="ai", tool_trace=None, extra_content=None, envelope=envelope()
    )
    draft.response_text = "changed"

    assert draft.suppress is False
    assert draft.response_text == "changed"


def test_context_response_draft_copy_is_independent():
    draft = ResponseDraft("hi", "ai", [ToolTraceEntry(tool_name="t")], {"k": 1}, envelope())
    copy = draft.copy()
    copy.tool_trace.append(ToolTraceEntry(tool_name="u"))
    copy.extra_content["k"] = 2
    copy.response_text = "other"

    assert [entry.tool_name for entry in draft.tool_trace] == ["t"]
    assert draft.extra_content == {"k": 1}
    assert draft.response_text == "hi"


def test_context_response_result_is_frozen():
    result = ResponseResult(
        response_text="hi", response_event_id="$r", delivery_kind="sent", response_kind="ai", envelope=envelope()
    )

    with pytest.raises(dataclasses.FrozenInstanceError):
        result.response_text = "x"


def test_context_response_result_carries_usage_only_when_given():
    plain = ResponseResult("hi", "$r", "sent", "ai", envelope())
    spent = ResponseResult("hi", "$r", "sent", "ai", envelope(), ResponseUsage(120, 8, 100, "gpt-small"))

    assert plain.usage is None
    assert spent.usage is not None and spent.usage.total_tokens == 128 and spent.usage.model == "gpt-small"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spent.usage.input_tokens = 1  # type: ignore[misc]


def test_context_before_response_takes_envelope_from_draft():
    env = envelope()
    ctx = BeforeResponseContext(draft=ResponseDraft("hi", "ai", None, None, env))

    assert ctx.envelope is env


def test_context_after_response_takes_envelope_from_result():
    env = envelope()
    ctx = AfterResponseContext(result=ResponseResult("hi", "$r", "edited", "ai", env))

    assert ctx.envelope is env
    assert ctx.result.delivery_kind == "edited"


def test_context_tool_after_call_fields():
    error = RuntimeError("x")
    ctx = ToolAfterCallContext(
        tool_name="shell",
        arguments={},
        agent_name="code",
        room_id=None,
        thread_id=None,
        requester_id=None,
        session_id=None,
        result=None,
        error=error,
        blocked=True,
        duration_ms=1.5,
    )

    assert (ctx.error, ctx.blocked, ctx.duration_ms) == (error, True, 1.5)


def test_context_custom_event_carries_payload():
    ctx = CustomEventContext(event_name="todo:item_completed", payload={"item_id": "1"})

    assert ctx.payload == {"item_id": "1"}
    assert ctx.event_name == "todo:item_completed"


# -- send_message ---------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_context_send_message_without_sender_returns_none():
    ctx = MessageReceivedContext(envelope=envelope())

    assert await ctx.send_message("!room:localhost", "hi") is None


@pytest.mark.asyncio
async def test_context_send_message_with_sender_returns_event_id():
    sender = Recorder("$evt")
    ctx = MessageReceivedContext(envelope=envelope(), message_sender=sender, plugin_name="p", hook_name="h")

    event_id = await ctx.send_message("!other:localhost", "hi", thread_id="$t", extra_content={"x": 1})

    assert event_id == "$evt"
    (sent,) = sender.sent
    assert (sent["room_id"], sent["text"], sent["thread_id"]) == ("!other:localhost", "hi", "$t")
    assert sent["extra_content"]["x"] == 1


@pytest.mark.asyncio
async def test_context_send_message_preserves_original_sender_for_message_contexts():
    sender = Recorder()
    ctx = MessageEnrichContext(envelope=envelope(requester_id="@alice:localhost"), message_sender=sender)

    await ctx.send_message("!room:localhost", "hi")

    assert sender.sent[0]["extra_content"][ORIGINAL_SENDER_KEY] == "@alice:localhost"
    assert ORIGINAL_SENDER_KEY == "com.mindroom.original_sender"


@pytest.mark.asyncio
async def test_context_send_message_does_not_mutate_callers_extra_content():
    sender = Recorder()
    extra = {"k": "v"}
    ctx = MessageReceivedContext(envelope=envelope(), message_sender=sender)

    await ctx.send_message("!room:localhost", "hi", extra_content=extra)

    assert extra == {"k": "v"}


@pytest.mark.asyncio
async def test_context_send_message_synthetic_depth_first_hop_is_one():
    sender = Recorder()
    ctx = MessageReceivedContext(envelope=envelope(), message_sender=sender)

    await ctx.send_message("!room:localhost", "hi")

    assert sender.sent[0]["extra_content"][SYNTHETIC_DEPTH_KEY] == 1


@pytest.mark.asyncio
async def test_context_send_message_synthetic_depth_increments_per_hop():
    sender = Recorder()
    ctx = MessageReceivedContext(
        envelope=envelope(source_kind="hook", hook_source="p:h", message_received_depth=2), message_sender=sender
    )

    await ctx.send_message("!room:localhost", "hi")

    assert sender.sent[0]["extra_content"][SYNTHETIC_DEPTH_KEY] == 3


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "ctx_factory",
    [
        lambda s: AgentLifecycleContext(entity_name="code", message_sender=s),
        lambda s: ScheduleFiredContext(room_id="!r:l", message_sender=s),
        lambda s: ToolBeforeCallContext(tool_name="t", message_sender=s),
        lambda s: ConfigReloadedContext(message_sender=s),
    ],
)
async def test_context_send_message_depth_is_one_outside_message_chains(ctx_factory):
    sender = Recorder()

    await ctx_factory(sender).send_message("!room:localhost", "hi")

    assert sender.sent[0]["extra_content"][SYNTHETIC_DEPTH_KEY] == 1


@pytest.mark.asyncio
async def test_context_send_message_trigger_dispatch_is_marked():
    sender = Recorder()
    ctx = MessageReceivedContext(envelope=envelope(), message_sender=sender)

    await ctx.send_message("!room:localhost", "plain")
    await ctx.send_message("!room:localhost", "dispatch", trigger_dispatch=True)

    plain, dispatch = (sent["extra_content"] for sent in sender.sent)
    assert not plain.get("com.mindroom.hook_dispatch")
    assert dispatch["com.mindroom.hook_dispatch"] is True


@pytest.mark.asyncio
async def test_context_send_message_names_the_hook_source():
    sender = Recorder()

    @hook(EVENT_MESSAGE_RECEIVED, name="relay")
    async def relay(ctx):
        await ctx.send_message(ctx.envelope.room_id, "relayed")

    registry = HookRegistry.from_plugins([stub_plugin("relayer", [relay])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext(envelope=envelope(), message_sender=sender))

    extra = sender.sent[0]["extra_content"]
    assert extra["com.mindroom.hook_source"] == "relayer:relay"
    assert extra[ORIGINAL_SENDER_KEY] == "@alice:localhost"


@pytest.mark.asyncio
async def test_context_send_message_message_context_defaults_to_room_level():
    sender = Recorder()
    ctx = MessageReceivedContext(envelope=envelope(thread_id="$thread"), message_sender=sender)

    await ctx.send_message("!room:localhost", "hi")

    assert sender.sent[0]["thread_id"] is None


@pytest.mark.asyncio
async def test_context_schedule_send_message_inherits_thread_when_omitted():
    sender = Recorder()
    ctx = ScheduleFiredContext(room_id="!r:l", thread_id="$sched-thread", message_sender=sender)

    await ctx.send_message("!r:l", "inherit")
    await ctx.send_message("!r:l", "room level", thread_id=None)
    await ctx.send_message("!r:l", "other thread", thread_id="$other")

    assert [sent["thread_id"] for sent in sender.sent] == ["$sched-thread", None, "$other"]


@pytest.mark.asyncio
async def test_context_schedule_send_message_original_sender_is_creator():
    sender = Recorder()
    ctx = ScheduleFiredContext(room_id="!r:l", created_by="@bob:localhost", message_sender=sender)

    await ctx.send_message("!r:l", "hi")

    assert sender.sent[0]["extra_content"][ORIGINAL_SENDER_KEY] == "@bob:localhost"


@pytest.mark.asyncio
async def test_context_tool_send_message_original_sender_is_requester():
    sender = Recorder()
    ctx = ToolAfterCallContext(tool_name="t", requester_id="@carol:localhost", message_sender=sender)

    await ctx.send_message("!r:l", "hi")

    assert sender.sent[0]["extra_content"][ORIGINAL_SENDER_KEY] == "@carol:localhost"


@pytest.mark.asyncio
async def test_context_lifecycle_send_message_has_no_original_sender():
    sender = Recorder()

    await AgentLifecycleContext(entity_name="code", message_sender=sender).send_message("!r:l", "hi")

    assert ORIGINAL_SENDER_KEY not in sender.sent[0]["extra_content"]


# -- room state ---------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_context_room_state_defaults_without_helpers():
    ctx = MessageReceivedContext()

    assert await ctx.query_room_state("!r:l", "m.room.topic", "") is None
    assert await ctx.query_room_state("!r:l", "m.room.topic") is None
    assert await ctx.put_room_state("!r:l", "com.example.x", "", {"a": 1}) is False


@pytest.mark.asyncio
async def test_context_room_state_helpers_forward_to_bound_callables():
    calls = []

    async def querier(room_id, event_type, state_key):
        calls.append(("query", room_id, event_type, state_key))
        return {"topic": "t"} if state_key is not None else {"": {"topic": "t"}}

    async def putter(room_id, event_type, state_key, content):
        calls.append(("put", room_id, event_type, state_key, content))
        return True

    ctx = ReactionReceivedContext(room_state_querier=querier, room_state_putter=putter)

    assert await ctx.query_room_state("!r:l", "m.room.topic", "") == {"topic": "t"}
    assert await ctx.query_room_state("!r:l", "m.room.topic") == {"": {"topic": "t"}}
    assert await ctx.put_room_state("!r:l", "com.example.x", "k", {"a": 1}) is True
    assert calls == [
        ("query", "!r:l", "m.room.topic", ""),
        ("query", "!r:l", "m.room.topic", None),
        ("put", "!r:l", "com.example.x", "k", {"a": 1}),
    ]


@pytest.mark.asyncio
async def test_context_room_state_transport_errors_propagate():
    async def querier(room_id, event_type, state_key):
        raise ConnectionError("homeserver unreachable")

    ctx = MessageReceivedContext(room_state_querier=querier)

    with pytest.raises(ConnectionError):
        await ctx.query_room_state("!r:l", "m.room.topic")


# -- scope --------------------------------------------------------------------------------------------------


def test_context_hook_scope_per_context_type():
    assert MessageReceivedContext(envelope=envelope()).hook_scope() == ("code", "!room:localhost")
    assert ToolBeforeCallContext(agent_name="a", room_id="!x").hook_scope() == ("a", "!x")
    assert ScheduleFiredContext(agent_name="a", room_id="!x").hook_scope() == ("a", "!x")
    assert ReactionReceivedContext(agent_name="a", room_id="!x").hook_scope() == ("a", "!x")
    assert AgentLifecycleContext(entity_name="a").hook_scope() == ("a", None)
    assert ConfigReloadedContext().hook_scope() == (None, None)


def test_context_no_context_exposes_a_hook_registry_or_matrix_client():
    for cls in (MessageReceivedContext, ToolBeforeCallContext, CustomEventContext, AgentLifecycleContext):
        fields = {field.name for field in dataclasses.fields(cls)}
        assert "hook_registry" not in fields
        assert "client" not in fields
        assert not hasattr(cls(), "hook_registry")


def test_context_state_root_is_a_path(tmp_path):
    ctx = MessageReceivedContext(plugin_name="p", runtime_paths=RuntimePaths.for_directory(tmp_path))

    assert isinstance(ctx.state_root, Path)


# -- HookBindings and the transport module -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_context_hook_bindings_fields_build_a_working_context(tmp_path):
    sent = []

    async def sender(room_id, text, *, thread_id=None, extra_content=None):
        sent.append((room_id, text))
        return "$sent"

    async def querier(room_id, event_type, state_key):
        return {"queried": event_type}

    async def putter(room_id, event_type, state_key, content):
        return True

    paths = RuntimePaths.for_directory(tmp_path)
    bindings = HookBindings(
        config="the-config",
        runtime_paths=paths,
        message_sender=sender,
        room_state_querier=querier,
        room_state_putter=putter,
    )

    ctx = ReactionReceivedContext(**bindings.fields(), plugin_name="p", room_id="!r:l")

    assert set(bindings.fields()) == {
        "config",
        "runtime_paths",
        "message_sender",
        "room_state_querier",
        "room_state_putter",
    }
    assert ctx.config == "the-config"
    assert ctx.state_root == (paths.plugins_state_root / "p").resolve()
    assert await ctx.send_message("!r:l", "hi") == "$sent"
    assert await ctx.query_room_state("!r:l", "m.topic", "") == {"queried": "m.topic"}
    assert await ctx.put_room_state("!r:l", "m.topic", "", {}) is True
    assert sent == [("!r:l", "hi")]


def test_context_hook_bindings_is_a_frozen_value():
    bindings = HookBindings()

    with pytest.raises(dataclasses.FrozenInstanceError):
        bindings.config = "other"
    assert bindings == HookBindings()
    assert bindings.fields() == dict.fromkeys(
        ("config", "runtime_paths", "message_sender", "room_state_querier", "room_state_putter")
    )


@pytest.mark.parametrize(
    "name", ["MessageEnvelope", "MessageTarget", "ResponseDraft", "ResponseResult", "ResponseUsage", "ToolTraceEntry"]
)
def test_context_transport_objects_are_one_class_under_every_path(name):
    import mindroom.hooks
    from mindroom.hooks import context, transport

    assert getattr(context, name) is getattr(transport, name) is getattr(mindroom.hooks, name)


def test_context_kinds_outside_the_documented_sets_are_not_rejected():
    envelope = MessageEnvelope(
        source_event_id="$e",
        room_id="!r",
        thread_id=None,
        resolved_thread_id=None,
        requester_id="@u",
        sender_id="@u",
        body="b",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="a",
        source_kind="carrier-pigeon",
    )
    draft = ResponseDraft("t", "oracle", None, None, envelope)
    result = ResponseResult("t", "$r", "telegraphed", "oracle", envelope)

    assert (envelope.source_kind, draft.response_kind, result.delivery_kind) == (
        "carrier-pigeon",
        "oracle",
        "telegraphed",
    )
