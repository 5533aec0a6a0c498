"""The 2026 API's observer contexts (cancelled, session, compaction, room members) and the base additions."""

import dataclasses

import pytest

from mindroom.hooks import (
    EVENT_COMPACTION_AFTER,
    EVENT_COMPACTION_BEFORE,
    EVENT_MESSAGE_CANCELLED,
    EVENT_ROOM_MEMBER_JOINED,
    EVENT_ROOM_MEMBER_LEFT,
    EVENT_SESSION_STARTED,
    AgentLifecycleContext,
    CancelledResponseContext,
    CancelledResponseInfo,
    CompactionHookContext,
    CustomEventContext,
    HistoryScope,
    HookRegistry,
    MessageEnvelope,
    MessageReceivedContext,
    RoomMemberJoinedContext,
    RoomMemberLeftContext,
    SessionHookContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    hook,
)
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin

ENVELOPE = MessageEnvelope(
    source_event_id="$e",
    room_id="!room:localhost",
    thread_id=None,
    resolved_thread_id="$e",
    requester_id="@alice:localhost",
    sender_id="@alice:localhost",
    body="hello",
    attachment_ids=(),
    mentioned_agents=(),
    agent_name="code",
    source_kind="message",
    message_received_depth=1,
)
SCOPE = HistoryScope("agent", "code")


def test_history_scope_key():
    assert HistoryScope("team", "alpha").key == "team:alpha"
    with pytest.raises(dataclasses.FrozenInstanceError):
        SCOPE.scope_id = "other"  # type: ignore[misc]


def test_cancelled_response_info_is_frozen_with_documented_defaults():
    info = CancelledResponseInfo(ENVELOPE)

    assert (info.visible_response_event_id, info.response_kind, info.failure_reason) == (None, "ai", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.failure_reason = "x"  # type: ignore[misc]


def test_newer_contexts_default_event_names_and_scopes():
    cancelled = CancelledResponseContext(info=CancelledResponseInfo(ENVELOPE, failure_reason="cancelled_by_user"))
    session = SessionHookContext(agent_name="code", scope=SCOPE, session_id="s", room_id="!r", thread_id="$t")
    compaction = CompactionHookContext(agent_name="code", room_id="!r", token_count_before=900)
    joined = RoomMemberJoinedContext(agent_name="router", room_id="!r", user_id="@bob:l", membership="join")
    left = RoomMemberLeftContext(agent_name="router", room_id="!r", user_id="@bob:l", membership="leave")

    assert cancelled.event_name == EVENT_MESSAGE_CANCELLED
    assert cancelled.hook_scope() == ("code", "!room:localhost")
    assert session.event_name == EVENT_SESSION_STARTED
    assert session.hook_scope() == ("code", "!r")
    assert compaction.event_name == EVENT_COMPACTION_BEFORE
    assert CompactionHookContext(event_name=EVENT_COMPACTION_AFTER).event_name == EVENT_COMPACTION_AFTER
    assert (compaction.token_count_after, compaction.compaction_summary) == (None, None)
    assert joined.event_name == EVENT_ROOM_MEMBER_JOINED
    assert left.event_name == EVENT_ROOM_MEMBER_LEFT
    assert joined.hook_scope() == ("router", "!r")


OBSERVED = [
    (EVENT_MESSAGE_CANCELLED, lambda: CancelledResponseContext(info=CancelledResponseInfo(ENVELOPE)), "info"),
    (EVENT_SESSION_STARTED, lambda: SessionHookContext(agent_name="code", session_id="s"), "session_id"),
    (EVENT_COMPACTION_BEFORE, lambda: CompactionHookContext(agent_name="code", messages=[{"a": 1}]), "messages"),
    (
        EVENT_COMPACTION_AFTER,
        lambda: CompactionHookContext(agent_name="code", token_count_after=3),
        "token_count_after",
    ),
    (EVENT_ROOM_MEMBER_JOINED, lambda: RoomMemberJoinedContext(agent_name="code", user_id="@b:l"), "user_id"),
    (EVENT_ROOM_MEMBER_LEFT, lambda: RoomMemberLeftContext(agent_name="code", user_id="@b:l"), "user_id"),
]


@pytest.mark.parametrize(("event", "make", "field_name"), OBSERVED, ids=[case[0] for case in OBSERVED])
@pytest.mark.asyncio
async def test_newer_observer_contexts_are_read_only_per_hook(event, make, field_name):
    seen = []

    @hook(event, priority=1)
    async def writer(ctx):
        setattr(ctx, field_name, "overwritten")

    @hook(event, priority=2)
    async def reader(ctx):
        seen.append(getattr(ctx, field_name))

    ctx = make()
    original = getattr(ctx, field_name)
    await emit(HookRegistry.from_plugins([stub_plugin("p", [writer, reader])]), event, ctx)

    assert seen == [original]
    assert getattr(ctx, field_name) == original


@pytest.mark.asyncio
async def test_compaction_hooks_each_get_their_own_deep_copy_of_the_messages():
    seen = []

    @hook(EVENT_COMPACTION_BEFORE, priority=1)
    async def mutate(ctx):
        ctx.messages[0]["content"] = "tampered"
        ctx.messages.append({"role": "user"})

    @hook(EVENT_COMPACTION_BEFORE, priority=2)
    async def read(ctx):
        seen.append([dict(message) for message in ctx.messages])

    messages = [{"role": "assistant", "content": "original", "tool_calls": [{"name": "x"}]}]
    ctx = CompactionHookContext(agent_name="code", messages=messages)
    await emit(HookRegistry.from_plugins([stub_plugin("p", [mutate, read])]), EVENT_COMPACTION_BEFORE, ctx)

    assert seen == [[{"role": "assistant", "content": "original", "tool_calls": [{"name": "x"}]}]]
    assert messages[0]["content"] == "original"


@pytest.mark.asyncio
async def test_compaction_messages_that_cannot_be_copied_skip_every_hook():
    import threading

    ran = []

    @hook(EVENT_COMPACTION_BEFORE)
    async def any_hook(ctx):
        ran.append(ctx)

    ctx = CompactionHookContext(agent_name="code", messages=[{"lock": threading.Lock()}])
    await emit(HookRegistry.from_plugins([stub_plugin("p", [any_hook])]), EVENT_COMPACTION_BEFORE, ctx)

    assert ran == []


# -- additions to existing contexts -----------------------------------------------------------------------


def test_existing_contexts_gained_the_newer_fields_with_defaults():
    assert MessageReceivedContext().skip_plugin_names == frozenset()
    assert MessageReceivedContext(skip_plugin_names=frozenset({"ping"})).skip_plugin_names == {"ping"}
    lifecycle = AgentLifecycleContext(entity_name="code", joined_room_ids=("!a", "!b"), stop_reason="restart")
    assert (lifecycle.joined_room_ids, lifecycle.stop_reason) == (("!a", "!b"), "restart")
    assert AgentLifecycleContext().joined_room_ids == ()
    assert CustomEventContext().message_received_depth == 0
    assert ToolBeforeCallContext().message_received_depth == 0
    assert ToolAfterCallContext().message_received_depth == 0
    assert MessageReceivedContext().runtime_started_at is None
    assert MessageReceivedContext().matrix_admin is None


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "make",
    [
        lambda sender: CustomEventContext(message_received_depth=1, message_sender=sender),
        lambda sender: ToolBeforeCallContext(message_received_depth=1, message_sender=sender),
        lambda sender: ToolAfterCallContext(message_received_depth=1, message_sender=sender),
        lambda sender: CancelledResponseContext(info=CancelledResponseInfo(ENVELOPE), message_sender=sender),
    ],
)
async def test_send_message_depth_follows_the_chain_the_context_came_from(make):
    sent = []

    async def sender(room_id, text, thread_id=None, extra_content=None):
        sent.append(extra_content)
        return "$sent"

    await make(sender).send_message("!r", "hi")

    assert sent[0]["com.mindroom.hook_depth"] == 2


@pytest.mark.asyncio
async def test_cancelled_context_send_message_keeps_the_requester():
    sent = []

    async def sender(room_id, text, thread_id=None, extra_content=None):
        sent.append(extra_content)

    ctx = CancelledResponseContext(info=CancelledResponseInfo(ENVELOPE), message_sender=sender)
    await ctx.send_message("!r", "sorry, that failed")

    assert sent[0]["com.mindroom.original_sender"] == "@alice:localhost"
