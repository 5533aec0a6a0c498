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
    "EVENT_COMPACTION_AFTER",
    "EVENT_COMPACTION_BEFORE",
    "EVENT_CONFIG_RELOADED",
    "EVENT_MESSAGE_AFTER_RESPONSE",
    "EVENT_MESSAGE_BEFORE_RESPONSE",
    "EVENT_MESSAGE_CANCELLED",
    "EVENT_MESSAGE_ENRICH",
    "EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM",
    "EVENT_MESSAGE_RECEIVED",
    "EVENT_REACTION_RECEIVED",
    "EVENT_ROOM_MEMBER_JOINED",
    "EVENT_ROOM_MEMBER_LEFT",
    "EVENT_SCHEDULE_FIRED",
    "EVENT_SESSION_STARTED",
    "EVENT_SYSTEM_ENRICH",
    "EVENT_TOOL_AFTER_CALL",
    "EVENT_TOOL_BEFORE_CALL",
    "EVENT_TOOL_ENVIRONMENT",
    "NEWER_EVENTS",
    "PIPELINE_ORDER",
    "REQUIRED_HOOK_EVENTS",
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
# The nine events of the 2026 plugin API.
EVENT_SYSTEM_ENRICH: Final = "system:enrich"
EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM: Final = "message:final_response_transform"
EVENT_MESSAGE_CANCELLED: Final = "message:cancelled"
EVENT_SESSION_STARTED: Final = "session:started"
EVENT_COMPACTION_BEFORE: Final = "compaction:before"
EVENT_COMPACTION_AFTER: Final = "compaction:after"
EVENT_ROOM_MEMBER_JOINED: Final = "room:member_joined"
EVENT_ROOM_MEMBER_LEFT: Final = "room:member_left"
EVENT_TOOL_ENVIRONMENT: Final = "tool:environment"


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
    EVENT_SYSTEM_ENRICH: HookExecutionMode.COLLECTOR,
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM: HookExecutionMode.TRANSFORMER,
    EVENT_MESSAGE_CANCELLED: HookExecutionMode.OBSERVER,
    EVENT_SESSION_STARTED: HookExecutionMode.OBSERVER,
    EVENT_COMPACTION_BEFORE: HookExecutionMode.OBSERVER,
    EVENT_COMPACTION_AFTER: HookExecutionMode.OBSERVER,
    EVENT_ROOM_MEMBER_JOINED: HookExecutionMode.OBSERVER,
    EVENT_ROOM_MEMBER_LEFT: HookExecutionMode.OBSERVER,
    EVENT_TOOL_ENVIRONMENT: HookExecutionMode.COLLECTOR,
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
    EVENT_SYSTEM_ENRICH: 2000,
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM: 200,
    EVENT_MESSAGE_CANCELLED: 3000,
    EVENT_SESSION_STARTED: 5000,
    EVENT_COMPACTION_BEFORE: 15000,
    EVENT_COMPACTION_AFTER: 5000,
    EVENT_ROOM_MEMBER_JOINED: 3000,
    EVENT_ROOM_MEMBER_LEFT: 3000,
    EVENT_TOOL_ENVIRONMENT: 200,
}
CUSTOM_EVENT_TIMEOUT_MS: Final = 1000

PIPELINE_ORDER: Final[tuple[str, ...]] = (
    EVENT_MESSAGE_RECEIVED,
    EVENT_MESSAGE_ENRICH,
    EVENT_SYSTEM_ENRICH,
    EVENT_COMPACTION_BEFORE,
    EVENT_COMPACTION_AFTER,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_CANCELLED,
    EVENT_SESSION_STARTED,
    EVENT_AGENT_STARTED,
    EVENT_BOT_READY,
    EVENT_AGENT_STOPPED,
    EVENT_CONFIG_RELOADED,
    EVENT_SCHEDULE_FIRED,
    EVENT_REACTION_RECEIVED,
    EVENT_ROOM_MEMBER_JOINED,
    EVENT_ROOM_MEMBER_LEFT,
    EVENT_TOOL_BEFORE_CALL,
    EVENT_TOOL_ENVIRONMENT,
    EVENT_TOOL_AFTER_CALL,
)
"""Built-in events in the order a turn meets them (its end: answered, cancelled, session stored), then
lifecycle, schedule, reaction, room-membership and tool events (a tool call: gate, environment, result)."""

BUILTIN_EVENTS: Final = frozenset(_MODES)
NEWER_EVENTS: Final = frozenset(
    {
        EVENT_SYSTEM_ENRICH,
        EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
        EVENT_MESSAGE_CANCELLED,
        EVENT_SESSION_STARTED,
        EVENT_COMPACTION_BEFORE,
        EVENT_COMPACTION_AFTER,
        EVENT_ROOM_MEMBER_JOINED,
        EVENT_ROOM_MEMBER_LEFT,
        EVENT_TOOL_ENVIRONMENT,
    }
)
"""The events the 2026 plugin API added to the twelve of the hooks spec."""
REQUIRED_HOOK_EVENTS: Final = frozenset({EVENT_AGENT_STARTED})
"""Events whose hooks may be declared `required=True`: a failure then fails the bot's start."""
RESERVED_NAMESPACES: Final = frozenset(
    {"message", "agent", "bot", "schedule", "reaction", "config", "tool", "system", "compaction", "room", "session"}
)
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
