"""Event names, modes and default timeouts: the spec's two tables, and event-name validation."""

import pytest

from mindroom.hooks import (
    BUILTIN_EVENTS,
    DEFAULT_TIMEOUTS_MS,
    EVENT_AGENT_STARTED,
    EVENT_AGENT_STOPPED,
    EVENT_BOT_READY,
    EVENT_COMPACTION_AFTER,
    EVENT_COMPACTION_BEFORE,
    EVENT_CONFIG_RELOADED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_CANCELLED,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
    EVENT_MESSAGE_RECEIVED,
    EVENT_MODEL_AFTER_CALL,
    EVENT_MODEL_BEFORE_CALL,
    EVENT_REACTION_RECEIVED,
    EVENT_ROOM_MEMBER_JOINED,
    EVENT_ROOM_MEMBER_LEFT,
    EVENT_SCHEDULE_FIRED,
    EVENT_SESSION_STARTED,
    EVENT_SYSTEM_ENRICH,
    EVENT_TOOL_AFTER_CALL,
    EVENT_TOOL_BEFORE_CALL,
    EVENT_TOOL_ENVIRONMENT,
    NEWER_EVENTS,
    RESERVED_NAMESPACES,
    HookExecutionMode,
    default_timeout_ms,
    execution_mode,
    types,
    validate_event_name,
)
from mindroom.hooks.types import (
    EVENT_CONSTANTS,
    EVENT_TABLE,
    HOOK_CONTEXTS,
    OWN_EVENT_CONSTANTS,
    OWN_EVENTS,
    OWN_HOOK_CONTEXTS,
    PIPELINE_ORDER,
    export_order,
    is_custom_event,
)

SPEC_EVENTS = {
    # event: (constant, mode, default timeout ms, context class), from the hooks spec's two tables
    "message:received": (EVENT_MESSAGE_RECEIVED, HookExecutionMode.OBSERVER, 15000, "MessageReceivedContext"),
    "message:enrich": (EVENT_MESSAGE_ENRICH, HookExecutionMode.COLLECTOR, 2000, "MessageEnrichContext"),
    "message:before_response": (
        EVENT_MESSAGE_BEFORE_RESPONSE,
        HookExecutionMode.TRANSFORMER,
        200,
        "BeforeResponseContext",
    ),
    "message:after_response": (EVENT_MESSAGE_AFTER_RESPONSE, HookExecutionMode.OBSERVER, 3000, "AfterResponseContext"),
    "agent:started": (EVENT_AGENT_STARTED, HookExecutionMode.OBSERVER, 5000, "AgentLifecycleContext"),
    "agent:stopped": (EVENT_AGENT_STOPPED, HookExecutionMode.OBSERVER, 5000, "AgentLifecycleContext"),
    "bot:ready": (EVENT_BOT_READY, HookExecutionMode.OBSERVER, 5000, "AgentLifecycleContext"),
    "schedule:fired": (EVENT_SCHEDULE_FIRED, HookExecutionMode.OBSERVER, 1000, "ScheduleFiredContext"),
    "reaction:received": (EVENT_REACTION_RECEIVED, HookExecutionMode.OBSERVER, 500, "ReactionReceivedContext"),
    "config:reloaded": (EVENT_CONFIG_RELOADED, HookExecutionMode.OBSERVER, 5000, "ConfigReloadedContext"),
    "tool:before_call": (EVENT_TOOL_BEFORE_CALL, HookExecutionMode.GATE, 200, "ToolBeforeCallContext"),
    "tool:after_call": (EVENT_TOOL_AFTER_CALL, HookExecutionMode.OBSERVER, 300, "ToolAfterCallContext"),
}
# The 2026 plugin API's nine events (its section 2 table).
NEWER_SPEC_EVENTS = {
    "system:enrich": (EVENT_SYSTEM_ENRICH, HookExecutionMode.COLLECTOR, 2000, "SystemEnrichContext"),
    "message:cancelled": (EVENT_MESSAGE_CANCELLED, HookExecutionMode.OBSERVER, 3000, "CancelledResponseContext"),
    "session:started": (EVENT_SESSION_STARTED, HookExecutionMode.OBSERVER, 5000, "SessionHookContext"),
    "compaction:before": (EVENT_COMPACTION_BEFORE, HookExecutionMode.OBSERVER, 15000, "CompactionHookContext"),
    "compaction:after": (EVENT_COMPACTION_AFTER, HookExecutionMode.OBSERVER, 5000, "CompactionHookContext"),
    "message:final_response_transform": (
        EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
        HookExecutionMode.TRANSFORMER,
        200,
        "FinalResponseTransformContext",
    ),
    "room:member_joined": (EVENT_ROOM_MEMBER_JOINED, HookExecutionMode.OBSERVER, 3000, "RoomMemberJoinedContext"),
    "room:member_left": (EVENT_ROOM_MEMBER_LEFT, HookExecutionMode.OBSERVER, 3000, "RoomMemberLeftContext"),
    "tool:environment": (EVENT_TOOL_ENVIRONMENT, HookExecutionMode.COLLECTOR, 200, "ToolEnvironmentContext"),
}
ALL_EVENTS = {**SPEC_EVENTS, **NEWER_SPEC_EVENTS}
# The daemon's own events, which MindRoom does not have (docs/plugins.md, "Model calls").
OWN_SPEC_EVENTS = {
    "model:before_call": (EVENT_MODEL_BEFORE_CALL, HookExecutionMode.GATE, 500, "ModelBeforeCallContext"),
    "model:after_call": (EVENT_MODEL_AFTER_CALL, HookExecutionMode.OBSERVER, 500, "ModelAfterCallContext"),
}


@pytest.mark.parametrize(("event", "expected"), {**ALL_EVENTS, **OWN_SPEC_EVENTS}.items())
def test_event_constant_mode_and_timeout_match_spec(event, expected):
    constant, mode, timeout, _ = expected

    assert constant == event
    assert execution_mode(event) is mode
    assert default_timeout_ms(event) == timeout
    assert DEFAULT_TIMEOUTS_MS[event] == timeout


def test_event_table_rows_are_both_spec_tables():
    rows = {row.name: (row.mode, row.timeout_ms, row.context, row.newer, row.own) for row in EVENT_TABLE}

    expected = {
        event: (mode, timeout, context, event in NEWER_SPEC_EVENTS, event in OWN_SPEC_EVENTS)
        for event, (_, mode, timeout, context) in {**ALL_EVENTS, **OWN_SPEC_EVENTS}.items()
    }
    assert rows == expected
    assert len(EVENT_TABLE) == len(rows) == 23


def test_event_table_names_each_constant_the_module_defines():
    defined = {
        name: value for name, value in vars(types).items() if name.startswith("EVENT_") and isinstance(value, str)
    }

    assert defined == {row.constant: row.name for row in EVENT_TABLE}
    assert tuple(sorted(defined)) == tuple(sorted(EVENT_CONSTANTS + OWN_EVENT_CONSTANTS))
    assert OWN_EVENT_CONSTANTS == ("EVENT_MODEL_AFTER_CALL", "EVENT_MODEL_BEFORE_CALL")


def test_event_table_gives_each_context_class_once_and_custom_events_last():
    import mindroom.hooks as hooks

    assert HOOK_CONTEXTS[-1] == "CustomEventContext"
    assert len(HOOK_CONTEXTS) == len(set(HOOK_CONTEXTS)) == 19
    assert {row.context for row in EVENT_TABLE if not row.own} | {"CustomEventContext"} == set(HOOK_CONTEXTS)
    assert OWN_HOOK_CONTEXTS == ("ModelBeforeCallContext", "ModelAfterCallContext")
    for name in HOOK_CONTEXTS + OWN_HOOK_CONTEXTS:
        assert isinstance(getattr(hooks, name), type)


def test_event_table_derives_what_the_hooks_package_exports():
    import mindroom.hooks as hooks

    assert set(EVENT_CONSTANTS) | set(HOOK_CONTEXTS) <= set(hooks.__all__)
    assert set(OWN_EVENT_CONSTANTS) | set(OWN_HOOK_CONTEXTS) <= set(hooks.__all__)
    assert tuple(row.name for row in EVENT_TABLE) == PIPELINE_ORDER


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        (["b", "Ab", "EVENT_X", "Bc", "a2", "a10"], ["EVENT_X", "Ab", "Bc", "a2", "a10", "b"]),
        (["EVENT_TOOL_AFTER_CALL", "EVENT_TABLE", "EVENT_TOOL_AFTER_CALL"], ["EVENT_TABLE", "EVENT_TOOL_AFTER_CALL"]),
    ],
)
def test_export_order_sorts_constants_classes_then_the_rest_naturally(names, ordered):
    assert export_order(names) == ordered


def test_builtin_events_are_exactly_both_spec_tables_and_the_daemons_own():
    assert set(BUILTIN_EVENTS) == set(ALL_EVENTS) | set(OWN_SPEC_EVENTS)
    assert set(DEFAULT_TIMEOUTS_MS) == set(BUILTIN_EVENTS)
    assert len(BUILTIN_EVENTS) == 23
    assert set(OWN_EVENTS) == set(OWN_SPEC_EVENTS)
    assert set(NEWER_EVENTS) == set(NEWER_SPEC_EVENTS)


def test_reserved_namespaces_are_the_older_seven_the_newer_four_and_model():
    older = {"message", "agent", "bot", "schedule", "reaction", "config", "tool"}

    assert set(RESERVED_NAMESPACES) == older | {"system", "compaction", "room", "session", "model"}
    assert len(RESERVED_NAMESPACES) == 12


@pytest.mark.parametrize("namespace", ["system", "compaction", "room", "session", "model"])
def test_validate_event_name_rejects_custom_events_in_the_newer_namespaces(namespace):
    from mindroom.hooks import hook

    with pytest.raises(ValueError, match="reserved"):
        hook(f"{namespace}:made_up")


def test_custom_event_defaults_to_observer_and_1000_ms():
    assert execution_mode("todo:item_completed") is HookExecutionMode.OBSERVER
    assert default_timeout_ms("todo:item_completed") == 1000
    assert is_custom_event("todo:item_completed") is True
    assert is_custom_event("message:received") is False


def test_execution_mode_values_are_plain_strings():
    assert HookExecutionMode.COLLECTOR.value == "collector"
    assert {mode.value for mode in HookExecutionMode} == {"observer", "collector", "transformer", "gate"}


@pytest.mark.parametrize("event", [*ALL_EVENTS, *OWN_SPEC_EVENTS, "todo:item_completed", "models:x", "x-1.y_2:z"])
def test_validate_event_name_returns_valid_names(event):
    assert validate_event_name(event) == event


@pytest.mark.parametrize("event", ["todo", "TODO:done", "todo:", "todo: done", "todo:done\n", "to/do:done", 42, None])
def test_validate_event_name_rejects_malformed(event):
    with pytest.raises(ValueError, match="invalid hook event name"):
        validate_event_name(event)


@pytest.mark.parametrize("namespace", sorted(RESERVED_NAMESPACES))
def test_validate_event_name_rejects_unknown_event_in_reserved_namespace(namespace):
    with pytest.raises(ValueError, match="reserved"):
        validate_event_name(f"{namespace}:made_up")
