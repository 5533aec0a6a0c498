"""Base context additions of the 2026 API: `is_active()`, snapshots, `matrix_admin`, raw senders, bindings."""

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import (
    EVENT_MESSAGE_RECEIVED,
    AgentMessageSnapshot,
    HookBindings,
    HookContext,
    HookMatrixAdmin,
    HookRegistry,
    MessageReceivedContext,
    ScheduleFiredContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    hook,
)
from mindroom.hooks.capabilities import RelaySender
from mindroom.hooks.execution import emit
from mindroom.testing import CONTEXT_TYPES
from mindroom.tool_system.runtime_context import ToolRuntimeContext
from tests.hooks.support import stub_plugin

# -- is_active() ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_is_active_turns_false_once_the_registry_is_superseded():
    contexts = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def keep(ctx):
        contexts.append(ctx)

    old = HookRegistry.from_plugins([stub_plugin("p", [keep])])
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    new = HookRegistry.from_plugins([stub_plugin("p", [keep])], previous=old)

    assert contexts[0].is_active() is True
    old.mark_superseded()
    assert old.superseded is True
    assert contexts[0].is_active() is False
    await emit(new, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    assert contexts[1].is_active() is True


@pytest.mark.asyncio
async def test_is_active_is_shared_by_a_registry_without_one_plugin():
    contexts = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def keep(ctx):
        contexts.append(ctx)

    registry = HookRegistry.from_plugins([stub_plugin("a", [keep]), stub_plugin("b", [])])
    await emit(registry.without_plugin("b"), EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    registry.mark_superseded()

    assert contexts[0].is_active() is False


def test_is_active_of_a_context_no_engine_ran_is_true():
    assert MessageReceivedContext().is_active() is True


# -- get_latest_agent_message_snapshot -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_snapshot_helper_asks_the_bound_reader():
    asked = []

    async def reader(room_id, sender, thread_id):
        asked.append((room_id, sender, thread_id))
        return AgentMessageSnapshot({"body": "last"}, 1700000000000)

    ctx = MessageReceivedContext(agent_message_snapshot_reader=reader)

    snapshot = await ctx.get_latest_agent_message_snapshot("!r", "@mindroom_code:l", thread_id="$t")
    room_level = await ctx.get_latest_agent_message_snapshot("!r", "@mindroom_code:l")

    assert snapshot == AgentMessageSnapshot({"body": "last"}, 1700000000000)
    assert room_level is not None
    assert asked == [("!r", "@mindroom_code:l", "$t"), ("!r", "@mindroom_code:l", None)]


@pytest.mark.asyncio
async def test_snapshot_helper_without_reader_warns_and_returns_none():
    ctx = ScheduleFiredContext()

    with capture_logs() as logs:
        assert await ctx.get_latest_agent_message_snapshot("!r", "@x:l") is None
    assert any(entry["event"] == "no agent message snapshot reader is bound" for entry in logs)


# -- matrix_admin ----------------------------------------------------------------------------------------


class RouterAdmin:
    """A complete implementation of the admin protocol, as the daemon will provide."""

    async def get_joined_rooms(self):
        return ["!a"]

    async def resolve_alias(self, alias):
        return None

    async def create_room(self, *, name, alias_localpart=None, topic=None, power_user_ids=None):
        return "!new"

    def retain_room(self, room_id):
        return None

    async def invite_user(self, room_id, user_id):
        return True

    async def force_join_user(self, room_id, user_id):
        return True

    async def kick_user(self, room_id, user_id, *, reason=None):
        return True

    async def get_room_members(self, room_id):
        return {"@a:l"}

    async def get_profile_avatar(self, user_id):
        return None

    async def get_room_state_event(self, room_id, event_type, state_key):
        return (True, None)

    async def add_room_to_space(self, space_room_id, room_id):
        return True

    async def put_room_state(self, room_id, event_type, state_key, content):
        return True


@pytest.mark.asyncio
async def test_matrix_admin_is_a_protocol_the_daemon_implements():
    admin = RouterAdmin()
    ctx = MessageReceivedContext(matrix_admin=admin)

    assert isinstance(admin, HookMatrixAdmin)
    assert not isinstance(object(), HookMatrixAdmin)
    assert await ctx.matrix_admin.create_room(name="Ops") == "!new"


# -- the raw sender in both shapes --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_relay_sender_passes_the_older_shape_through():
    calls = []

    async def daemon(room_id, text, thread_id=None, extra_content=None):
        calls.append((room_id, text, thread_id, extra_content))
        return "$e"

    relay = RelaySender(daemon)

    assert await relay("!r", "a") == "$e"
    await relay("!r", "b", "$t", {"k": 1})
    await relay("!r", "c", thread_id="$t", extra_content=None)
    assert calls == [("!r", "a", None, None), ("!r", "b", "$t", {"k": 1}), ("!r", "c", "$t", None)]


@pytest.mark.asyncio
async def test_relay_sender_translates_the_newer_raw_shape():
    calls = []

    async def daemon(room_id, text, thread_id=None, extra_content=None):
        calls.append((thread_id, extra_content))
        return "$e"

    relay = RelaySender(daemon)

    await relay("!r", "poke", "$t", "workloop:auto_poke", {"x": 1})
    await relay("!r", "go", None, "p:h", None, trigger_dispatch=True)
    await relay("!r", "plain", "$t", "p:h")

    assert calls[0] == ("$t", {"x": 1, "com.mindroom.hook_source": "workloop:auto_poke", "com.mindroom.hook_depth": 1})
    assert calls[1][1]["com.mindroom.hook_dispatch"] is True
    assert calls[2] == ("$t", {"com.mindroom.hook_source": "p:h", "com.mindroom.hook_depth": 1})


@pytest.mark.asyncio
async def test_contexts_and_bindings_expose_a_sender_that_takes_both_shapes():
    calls = []

    async def daemon(room_id, text, thread_id=None, extra_content=None):
        calls.append(text)

    bindings = HookBindings(message_sender=daemon)
    ctx = MessageReceivedContext(**bindings.fields())

    await ctx.message_sender("!r", "raw", None, "p:h", None)
    await ctx.send_message("!r", "helper")

    assert calls == ["raw", "helper"]
    assert type(bindings.message_sender) is RelaySender
    assert ctx.message_sender is bindings.message_sender
    assert HookBindings(message_sender=daemon) == bindings


def test_bindings_fields_stay_the_five_until_newer_capabilities_are_bound():
    admin = RouterAdmin()

    assert set(HookBindings().fields()) == {
        "config",
        "runtime_paths",
        "message_sender",
        "room_state_querier",
        "room_state_putter",
    }
    assert HookBindings(matrix_admin=admin).fields()["matrix_admin"] is admin
    full = HookBindings(runtime_started_at=12.5).fields()
    assert full["runtime_started_at"] == 12.5
    assert MessageReceivedContext(**full).runtime_started_at == 12.5


# The contexts the daemon builds from a bot's bindings (tool hooks get theirs from the tool runtime).
BOUND_CONTEXTS = [
    cls
    for cls in CONTEXT_TYPES.values()
    if issubclass(cls, HookContext) and cls not in (ToolBeforeCallContext, ToolAfterCallContext)
]


@pytest.mark.parametrize("cls", BOUND_CONTEXTS, ids=lambda cls: cls.__name__)
@pytest.mark.asyncio
async def test_bindings_give_every_context_the_start_time_and_the_snapshot_reader(cls):
    seen = AgentMessageSnapshot(content={"body": "Working..."}, origin_server_ts=7)
    asked = []

    async def reader(room_id, sender, thread_id):
        asked.append((room_id, sender, thread_id))
        return seen

    bindings = HookBindings(runtime_started_at=12.5, agent_message_snapshot_reader=reader)
    ctx = cls(**bindings.fields())

    assert ctx.runtime_started_at == 12.5
    assert await ctx.get_latest_agent_message_snapshot("!r", "@mindroom_code:l", thread_id="$t") is seen
    assert asked == [("!r", "@mindroom_code:l", "$t")]
    assert not hasattr(bindings, "context_fields")  # one name for the keywords every context takes


def test_bindings_tool_runtime_fields_build_a_tool_runtime_context_with_everything_bound():
    admin = RouterAdmin()

    async def reader(room_id, sender, thread_id):
        return None

    bindings = HookBindings(
        config="cfg", matrix_admin=admin, runtime_started_at=1.0, agent_message_snapshot_reader=reader
    )
    runtime = ToolRuntimeContext(HookRegistry.empty(), **bindings.tool_runtime_fields())

    assert (runtime.config, runtime.matrix_admin) == ("cfg", admin)
    assert set(bindings.fields()) - set(bindings.tool_runtime_fields()) == {
        "runtime_started_at",
        "agent_message_snapshot_reader",
    }
