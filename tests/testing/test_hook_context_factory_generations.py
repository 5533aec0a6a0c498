"""`hook_context_factory` for every context of both API generations: the 2026 API's contexts by the same rules."""

import pytest

import mindroom.hooks as hooks_package
from mindroom.hooks import (
    CancelledResponseContext,
    CompactionHookContext,
    FinalResponseDraft,
    FinalResponseTransformContext,
    HistoryScope,
    HookContextBase,
    HookRegistry,
    MessageEnvelope,
    MessageTarget,
    RoomMemberJoinedContext,
    RoomMemberLeftContext,
    SessionHookContext,
    SystemEnrichContext,
    ToolBeforeCallContext,
    ToolEnvironmentContext,
    TurnIntent,
    TurnOrigin,
    hook,
)
from mindroom.hooks.execution import (
    emit,
    emit_collect,
    emit_final_transform,
    emit_gate,
    emit_system_enrich,
    emit_tool_environment,
    emit_transform,
)
from mindroom.testing import CONTEXT_TYPES
from tests.hooks.support import stub_plugin

NEWER_EVENTS = {
    SystemEnrichContext: "system:enrich",
    FinalResponseTransformContext: "message:final_response_transform",
    CancelledResponseContext: "message:cancelled",
    SessionHookContext: "session:started",
    CompactionHookContext: "compaction:before",
    RoomMemberJoinedContext: "room:member_joined",
    RoomMemberLeftContext: "room:member_left",
    ToolEnvironmentContext: "tool:environment",
}
EMITTERS = {
    "message:enrich": lambda registry, event, ctx: emit_collect(registry, event, ctx),
    "system:enrich": lambda registry, event, ctx: emit_system_enrich(registry, ctx),
    "tool:environment": lambda registry, event, ctx: emit_tool_environment(registry, ctx),
    "message:final_response_transform": lambda registry, event, ctx: emit_final_transform(registry, ctx),
    "message:before_response": emit_transform,
    "tool:before_call": emit_gate,
}
EXPORTED_CONTEXTS = {
    name
    for name in hooks_package.__all__
    if name.endswith("Context") and name not in {"HookContext", "HookContextBase"}
}


def test_hook_context_factory_knows_every_context_the_hooks_package_exports():
    assert set(CONTEXT_TYPES) == EXPORTED_CONTEXTS


@pytest.mark.parametrize("name", sorted(EXPORTED_CONTEXTS))
def test_hook_context_factory_builds_every_context_by_class_and_by_name(hook_context_factory, name):
    cls = getattr(hooks_package, name)

    by_class = hook_context_factory(cls)
    by_name = hook_context_factory(name)

    assert type(by_class) is cls and type(by_name) is cls
    assert by_class.correlation_id != by_name.correlation_id
    assert isinstance(by_class, HookContextBase)


@pytest.mark.parametrize(("cls", "event"), NEWER_EVENTS.items())
def test_hook_context_factory_newer_contexts_default_to_their_own_event(hook_context_factory, cls, event):
    assert hook_context_factory(cls).event_name == event


@pytest.mark.parametrize(("cls", "event"), NEWER_EVENTS.items())
@pytest.mark.asyncio
async def test_hook_context_factory_newer_contexts_are_ready_to_emit(hook_context_factory, cls, event):
    seen = []
    agent = "router" if cls in (RoomMemberJoinedContext, RoomMemberLeftContext) else "code"

    @hook(event, agents=[agent], rooms=["!room:localhost"])
    async def record(ctx):
        seen.append(ctx.event_name)

    registry = HookRegistry.from_plugins([stub_plugin("demo", [record])])
    await EMITTERS.get(event, emit)(registry, event, hook_context_factory(cls))

    assert seen == [event]


# -- per-type fields -----------------------------------------------------------------------------------------


def test_hook_context_factory_system_enrich_targets_the_envelope_agent(hook_context_factory):
    default = hook_context_factory(SystemEnrichContext, agent_name="research", body="plan the trip")
    team = hook_context_factory(SystemEnrichContext, target_entity_name="crew", target_member_names=("a", "b"))

    assert (default.target_entity_name, default.target_member_names) == ("research", None)
    assert default.envelope.body == "plan the trip"
    assert (team.target_entity_name, team.target_member_names) == ("crew", ("a", "b"))


@pytest.mark.asyncio
async def test_hook_context_factory_system_enrich_collects_instructions(hook_context_factory):
    @hook("system:enrich")
    async def house_rules(ctx):
        ctx.add_instruction("rules", "Answer in English.", cache_policy="stable")

    registry = HookRegistry.from_plugins([stub_plugin("demo", [house_rules])])
    items = await emit_system_enrich(registry, hook_context_factory("SystemEnrichContext"))

    assert [(item.key, item.text, item.cache_policy) for item in items] == [("rules", "Answer in English.", "stable")]


@pytest.mark.asyncio
async def test_hook_context_factory_final_transform_takes_draft_fields_flat(hook_context_factory):
    ctx = hook_context_factory(FinalResponseTransformContext, response_text="Hello", response_kind="team", body="q")

    @hook("message:final_response_transform")
    async def shout(ctx):
        ctx.draft.response_text = ctx.draft.response_text.upper()

    registry = HookRegistry.from_plugins([stub_plugin("demo", [shout])])

    assert isinstance(ctx.draft, FinalResponseDraft)
    assert (ctx.draft.response_text, ctx.draft.response_kind) == ("Hello", "team")
    assert ctx.draft.envelope is ctx.envelope and ctx.envelope.body == "q"
    assert await emit_final_transform(registry, ctx) == "HELLO"


def test_hook_context_factory_cancelled_puts_message_and_reason_in_info(hook_context_factory):
    ctx = hook_context_factory(
        CancelledResponseContext,
        body="why?",
        thread_id="$t",
        failure_reason="suppressed_by_hook",
        visible_response_event_id="$shown",
        response_kind="ai",
    )
    default = hook_context_factory(CancelledResponseContext)

    info = ctx.info
    assert isinstance(info.envelope, MessageEnvelope)
    assert (info.envelope.body, info.envelope.thread_id) == ("why?", "$t")
    assert (info.failure_reason, info.visible_response_event_id) == ("suppressed_by_hook", "$shown")
    assert (default.info.failure_reason, default.info.envelope.agent_name) == (None, "code")
    assert ctx.hook_scope() == ("code", "!room:localhost")


def test_hook_context_factory_session_context_derives_its_session(hook_context_factory):
    room_level = hook_context_factory(SessionHookContext)
    threaded = hook_context_factory("SessionHookContext", agent_name="research", room_id="!lab:", thread_id="$t")

    assert (room_level.agent_name, room_level.room_id) == ("code", "!room:localhost")
    assert room_level.session_id == "!room:localhost"
    assert threaded.session_id == "!lab::$t"
    assert threaded.scope == HistoryScope("agent", "research")
    assert hook_context_factory(SessionHookContext, session_id="custom").session_id == "custom"


def test_hook_context_factory_compaction_fields(hook_context_factory):
    before = hook_context_factory(CompactionHookContext, messages=[{"role": "user"}], token_count_before=900)
    after = hook_context_factory(
        "CompactionHookContext",
        event_name="compaction:after",
        token_count_before=900,
        token_count_after=200,
        compaction_summary="They planned a trip.",
    )

    assert (before.messages, before.token_count_before, before.token_count_after) == ([{"role": "user"}], 900, None)
    assert before.scope.key == "agent:code"
    assert (after.event_name, after.token_count_after, after.compaction_summary) == (
        "compaction:after",
        200,
        "They planned a trip.",
    )


@pytest.mark.parametrize(
    ("cls", "membership", "previous"),
    [(RoomMemberJoinedContext, "join", None), (RoomMemberLeftContext, "leave", "join")],
)
def test_hook_context_factory_room_member_defaults(hook_context_factory, cls, membership, previous):
    default = hook_context_factory(cls)
    ctx = hook_context_factory(cls, user_id="@bob:localhost", display_name="Bob")

    assert (default.agent_name, default.room_id, default.user_id) == ("router", "!room:localhost", "@user:localhost")
    assert (default.membership, default.prev_membership) == (membership, previous)
    assert default.sender_id == default.user_id
    assert (ctx.user_id, ctx.sender_id, ctx.display_name) == ("@bob:localhost", "@bob:localhost", "Bob")


@pytest.mark.asyncio
async def test_hook_context_factory_tool_environment_collects_changes(hook_context_factory):
    @hook("tool:environment")
    async def scoped(ctx):
        if ctx.registered_toolkit == "shell":
            ctx.set_env("GIT_TERMINAL_PROMPT", "0")

    registry = HookRegistry.from_plugins([stub_plugin("demo", [scoped])])
    ctx = hook_context_factory(
        ToolEnvironmentContext, function_name="run_shell_command", registered_toolkit="shell", arguments={"c": "ls"}
    )

    environment = await emit_tool_environment(registry, ctx)

    assert (ctx.agent_name, ctx.room_id, ctx.requester_id) == ("code", "!room:localhost", "@user:localhost")
    assert dict(environment.set_values) == {"GIT_TERMINAL_PROMPT": "0"}


@pytest.mark.asyncio
async def test_hook_context_factory_binds_an_approval_requester(hook_context_factory):
    asked = []

    async def person(request):
        asked.append(request)
        return request.prompt == "safe?"

    ctx = hook_context_factory(ToolBeforeCallContext, tool_name="shell", approval_requester=person)

    assert await ctx.request_approval("safe?") is True
    assert await ctx.request_approval("risky?") is False
    assert [r.tool_name for r in asked] == ["shell", "shell"]
    assert await hook_context_factory(ToolBeforeCallContext).request_approval("nobody bound") is False


@pytest.mark.parametrize(
    ("cls", "keyword"),
    [
        (ToolEnvironmentContext, "message_sender"),
        (ToolEnvironmentContext, "thread_id"),
        (SessionHookContext, "body"),
        (RoomMemberJoinedContext, "requester_id"),
        (CancelledResponseContext, "response_text"),
        ("FinalResponseTransformContext", "response_event_id"),
        (CompactionHookContext, "summary"),
    ],
)
def test_hook_context_factory_newer_contexts_reject_unknown_keywords(hook_context_factory, cls, keyword):
    with pytest.raises(TypeError, match=keyword):
        hook_context_factory(cls, **{keyword: "x"})


@pytest.mark.parametrize("cls", [c for c in NEWER_EVENTS if c is not ToolEnvironmentContext])
@pytest.mark.asyncio
async def test_hook_context_factory_newer_contexts_bind_a_message_sender(hook_context_factory, cls):
    sent = []

    async def sender(room_id, text, *, thread_id=None, extra_content=None, **_):
        sent.append((room_id, text, thread_id))
        return "$event"

    ctx = hook_context_factory(cls, message_sender=sender)

    assert await ctx.send_message("!room:localhost", "hi", thread_id="$t") == "$event"
    assert sent == [("!room:localhost", "hi", "$t")]


def test_hook_context_factory_takes_the_2026_envelope_names(hook_context_factory):
    target = MessageTarget("!lab:localhost", "$root", "$root", "$q")
    origin = TurnOrigin.classify(
        transport_sender_id="@mindroom_router:localhost",
        requester_id="@alice:localhost",
        source_kind="voice",
        sender_entity_name="router",
        trusted_user_relay=True,
    )

    ctx = hook_context_factory("MessageEnrichContext", target=target, origin=origin, body="hi")
    flat = hook_context_factory("MessageEnrichContext", origin=origin, room_id="!lab:localhost")

    assert ctx.envelope.target is target and ctx.envelope.origin is origin
    assert (ctx.envelope.room_id, ctx.envelope.sender_id, ctx.envelope.source_kind) == (
        "!lab:localhost",
        "@mindroom_router:localhost",
        "voice",
    )
    assert ctx.envelope.origin.intent is TurnIntent.ROUTER_HANDOFF
    assert flat.envelope.origin is origin and flat.envelope.room_id == "!lab:localhost"
