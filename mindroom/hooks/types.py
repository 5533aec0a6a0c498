"""Event names, their execution modes and default timeouts, and event-name validation."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final

__all__ = [
    "BUILTIN_EVENTS",
    "CUSTOM_EVENT_TIMEOUT_MS",
    "DEFAULT_TIMEOUTS_MS",
    "EVENT_AGENT_STARTED",
    "EVENT_AGENT_STOPPED",
    "EVENT_BOT_READY",
    "EVENT_CONFIG_RELOADED",
    "EVENT_MESSAGE_AFTER_RESPONSE",
    "EVENT_MESSAGE_BEFORE_RESPONSE",
    "EVENT_MESSAGE_ENRICH",
    "EVENT_MESSAGE_RECEIVED",
    "EVENT_REACTION_RECEIVED",
    "EVENT_SCHEDULE_FIRED",
    "EVENT_TOOL_AFTER_CALL",
    "EVENT_TOOL_BEFORE_CALL",
    "PIPELINE_ORDER",
    "RESERVED_NAMESPACES",
    "HookExecutionMode",
    "default_timeout_ms",
    "execution_mode",
    "is_custom_event",
    "validate_event_name",
]

EVENT_MESSAGE_RECEIVED: Final = "message:received"
EVENT_MESSAGE_ENRICH: Final = "message:enrich"
EVENT_MESSAGE_BEFORE_RESPONSE: Final = "message:before_response"
EVENT_MESSAGE_AFTER_RESPONSE: Final = "message:after_response"
EVENT_AGENT_STARTED: Final = "agent:started"
EVENT_AGENT_STOPPED: Final = "agent:stopped"
EVENT_BOT_READY: Final = "bot:ready"
EVENT_SCHEDULE_FIRED: Final = "schedule:fired"
EVENT_REACTION_RECEIVED: Final = "reaction:received"
EVENT_CONFIG_RELOADED: Final = "config:reloaded"
EVENT_TOOL_BEFORE_CALL: Final = "tool:before_call"
EVENT_TOOL_AFTER_CALL: Final = "tool:after_call"


class HookExecutionMode(StrEnum):
    """How an event's hooks run: decided by the event, never by the hook."""

    OBSERVER = "observer"
    COLLECTOR = "collector"
    TRANSFORMER = "transformer"
    GATE = "gate"


_MODES: Final[dict[str, HookExecutionMode]] = {
    EVENT_MESSAGE_RECEIVED: HookExecutionMode.OBSERVER,
    EVENT_MESSAGE_ENRICH: HookExecutionMode.COLLECTOR,
    EVENT_MESSAGE_BEFORE_RESPONSE: HookExecutionMode.TRANSFORMER,
    EVENT_MESSAGE_AFTER_RESPONSE: HookExecutionMode.OBSERVER,
    EVENT_AGENT_STARTED: HookExecutionMode.OBSERVER,
    EVENT_AGENT_STOPPED: HookExecutionMode.OBSERVER,
    EVENT_BOT_READY: HookExecutionMode.OBSERVER,
    EVENT_SCHEDULE_FIRED: HookExecutionMode.OBSERVER,
    EVENT_REACTION_RECEIVED: HookExecutionMode.OBSERVER,
    EVENT_CONFIG_RELOADED: HookExecutionMode.OBSERVER,
    EVENT_TOOL_BEFORE_CALL: HookExecutionMode.GATE,
    EVENT_TOOL_AFTER_CALL: HookExecutionMode.OBSERVER,
}

DEFAULT_TIMEOUTS_MS: Final[dict[str, int]] = {
    EVENT_MESSAGE_RECEIVED: 15000,
    EVENT_MESSAGE_ENRICH: 2000,
    EVENT_MESSAGE_BEFORE_RESPONSE: 200,
    EVENT_MESSAGE_AFTER_RESPONSE: 3000,
    EVENT_REACTION_RECEIVED: 500,
    EVENT_SCHEDULE_FIRED: 1000,
    EVENT_AGENT_STARTED: 5000,
    EVENT_AGENT_STOPPED: 5000,
    EVENT_BOT_READY: 5000,
    EVENT_CONFIG_RELOADED: 5000,
    EVENT_TOOL_BEFORE_CALL: 200,
    EVENT_TOOL_AFTER_CALL: 300,
}
CUSTOM_EVENT_TIMEOUT_MS: Final = 1000

PIPELINE_ORDER: Final[tuple[str, ...]] = (
    EVENT_MESSAGE_RECEIVED,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_AGENT_STARTED,
    EVENT_BOT_READY,
    EVENT_AGENT_STOPPED,
    EVENT_CONFIG_RELOADED,
    EVENT_SCHEDULE_FIRED,
    EVENT_REACTION_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    EVENT_TOOL_AFTER_CALL,
)
"""Built-in events in the order a message meets them, then lifecycle, schedule, reaction and tool events."""

BUILTIN_EVENTS: Final = frozenset(_MODES)
RESERVED_NAMESPACES: Final = frozenset({"message", "agent", "bot", "schedule", "reaction", "config", "tool"})
_EVENT_NAME = re.compile(r"^[a-z0-9_.-]+(:[a-z0-9_.-]+)+$")


def validate_event_name(event_name: str) -> str:
    """Return `event_name` if it is a built-in event or a well-formed custom event; raise `ValueError` otherwise."""
    if not isinstance(event_name, str) or not _EVENT_NAME.fullmatch(event_name):
        msg = f"invalid hook event name {event_name!r}: must match namespace:name (lowercase, digits, '_', '.', '-')"
        raise ValueError(msg)
    if event_name in _MODES:
        return event_name
    namespace = event_name.split(":", 1)[0]
    if namespace in RESERVED_NAMESPACES:
        msg = f"unknown event {event_name!r}: the {namespace!r} namespace is reserved for built-in events"
        raise ValueError(msg)
    return event_name


def is_custom_event(event_name: str) -> bool:
    """True for plugin-defined events (anything outside the built-in table)."""
    return event_name not in _MODES


def execution_mode(event_name: str) -> HookExecutionMode:
    """The execution mode of an event; custom events are observers."""
    return _MODES.get(event_name, HookExecutionMode.OBSERVER)


def default_timeout_ms(event_name: str) -> int:
    """The default per-hook timeout of an event, from the spec's table."""
    return DEFAULT_TIMEOUTS_MS.get(event_name, CUSTOM_EVENT_TIMEOUT_MS)
