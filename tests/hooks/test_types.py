"""Event names, modes and default timeouts: the spec's two tables, and event-name validation."""

import pytest

from mindroom.hooks import (
    BUILTIN_EVENTS,
    DEFAULT_TIMEOUTS_MS,
    EVENT_AGENT_STARTED,
    EVENT_AGENT_STOPPED,
    EVENT_BOT_READY,
    EVENT_CONFIG_RELOADED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_REACTION_RECEIVED,
    EVENT_SCHEDULE_FIRED,
    EVENT_TOOL_AFTER_CALL,
    EVENT_TOOL_BEFORE_CALL,
    RESERVED_NAMESPACES,
    HookExecutionMode,
    default_timeout_ms,
    execution_mode,
    validate_event_name,
)
from mindroom.hooks.types import is_custom_event

SPEC_EVENTS = {
    # event: (constant, mode, default timeout ms)
    "message:received": (EVENT_MESSAGE_RECEIVED, HookExecutionMode.OBSERVER, 15000),
    "message:enrich": (EVENT_MESSAGE_ENRICH, HookExecutionMode.COLLECTOR, 2000),
    "message:before_response": (EVENT_MESSAGE_BEFORE_RESPONSE, HookExecutionMode.TRANSFORMER, 200),
    "message:after_response": (EVENT_MESSAGE_AFTER_RESPONSE, HookExecutionMode.OBSERVER, 3000),
    "agent:started": (EVENT_AGENT_STARTED, HookExecutionMode.OBSERVER, 5000),
    "agent:stopped": (EVENT_AGENT_STOPPED, HookExecutionMode.OBSERVER, 5000),
    "bot:ready": (EVENT_BOT_READY, HookExecutionMode.OBSERVER, 5000),
    "schedule:fired": (EVENT_SCHEDULE_FIRED, HookExecutionMode.OBSERVER, 1000),
    "reaction:received": (EVENT_REACTION_RECEIVED, HookExecutionMode.OBSERVER, 500),
    "config:reloaded": (EVENT_CONFIG_RELOADED, HookExecutionMode.OBSERVER, 5000),
    "tool:before_call": (EVENT_TOOL_BEFORE_CALL, HookExecutionMode.GATE, 200),
    "tool:after_call": (EVENT_TOOL_AFTER_CALL, HookExecutionMode.OBSERVER, 300),
}


@pytest.mark.parametrize(("event", "expected"), SPEC_EVENTS.items())
def test_event_constant_mode_and_timeout_match_spec(event, expected):
    constant, mode, timeout = expected

    assert constant == event
    assert execution_mode(event) is mode
    assert default_timeout_ms(event) == timeout
    assert DEFAULT_TIMEOUTS_MS[event] == timeout


def test_builtin_events_are_exactly_the_spec_table():
    assert set(BUILTIN_EVENTS) == set(SPEC_EVENTS)
    assert set(DEFAULT_TIMEOUTS_MS) == set(SPEC_EVENTS)


def test_reserved_namespaces_match_spec():
    assert set(RESERVED_NAMESPACES) == {"message", "agent", "bot", "schedule", "reaction", "config", "tool"}


def test_custom_event_defaults_to_observer_and_1000_ms():
    assert execution_mode("todo:item_completed") is HookExecutionMode.OBSERVER
    assert default_timeout_ms("todo:item_completed") == 1000
    assert is_custom_event("todo:item_completed") is True
    assert is_custom_event("message:received") is False


def test_execution_mode_values_are_plain_strings():
    assert HookExecutionMode.COLLECTOR.value == "collector"
    assert {mode.value for mode in HookExecutionMode} == {"observer", "collector", "transformer", "gate"}


@pytest.mark.parametrize("event", [*SPEC_EVENTS, "todo:item_completed", "a:b:c", "x-1.y_2:z"])
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
