"""The built-in events (`EVENT_TABLE`: name, execution mode, default timeout, context class), the lists the
public hook surface derives from it, and event-name validation.

A new built-in event is its constant and one row of the table: the modes, the timeouts, the pipeline
order, the newer events, and the names `mindroom.hooks` and `mindroom.plugin_api` export all come from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

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
# The nine events the 2026 plugin API added.
EVENT_SYSTEM_ENRICH: Final = "system:enrich"
EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM: Final = "message:final_response_transform"
EVENT_MESSAGE_CANCELLED: Final = "message:cancelled"
EVENT_SESSION_STARTED: Final = "session:started"
EVENT_COMPACTION_BEFORE: Final = "compaction:before"
EVENT_COMPACTION_AFTER: Final = "compaction:after"
EVENT_ROOM_MEMBER_JOINED: Final = "room:member_joined"
EVENT_ROOM_MEMBER_LEFT: Final = "room:member_left"
EVENT_TOOL_ENVIRONMENT: Final = "tool:environment"
# The daemon's own events, beyond MindRoom's: one model round-trip of a turn.
EVENT_MODEL_BEFORE_CALL: Final = "model:before_call"
EVENT_MODEL_AFTER_CALL: Final = "model:after_call"


class HookExecutionMode(StrEnum):
    """How an event's hooks run: decided by the event, never by the hook."""

    OBSERVER = "observer"
    COLLECTOR = "collector"
    TRANSFORMER = "transformer"
    GATE = "gate"


_OBSERVER, _COLLECTOR = HookExecutionMode.OBSERVER, HookExecutionMode.COLLECTOR
_TRANSFORMER, _GATE = HookExecutionMode.TRANSFORMER, HookExecutionMode.GATE


@dataclass(frozen=True, slots=True)
class BuiltinEvent:
    """One built-in event: how its hooks run, their default timeout, the context class they receive, and
    whether the 2026 plugin API added it (`newer`) to the hooks spec's twelve, or it is the daemon's own (`own`),
    which MindRoom does not have."""

    name: str
    mode: HookExecutionMode
    timeout_ms: int
    context: str
    newer: bool = False
    own: bool = False

    @property
    def constant(self) -> str:
        """The name of its constant: `EVENT_MESSAGE_RECEIVED` for `message:received`."""
        return "EVENT_" + self.name.replace(":", "_").upper()


EVENT_TABLE: Final[tuple[BuiltinEvent, ...]] = (
    BuiltinEvent(EVENT_MESSAGE_RECEIVED, _OBSERVER, 15000, "MessageReceivedContext"),
    BuiltinEvent(EVENT_MESSAGE_ENRICH, _COLLECTOR, 2000, "MessageEnrichContext"),
    BuiltinEvent(EVENT_SYSTEM_ENRICH, _COLLECTOR, 2000, "SystemEnrichContext", newer=True),
    BuiltinEvent(EVENT_COMPACTION_BEFORE, _OBSERVER, 15000, "CompactionHookContext", newer=True),
    BuiltinEvent(EVENT_COMPACTION_AFTER, _OBSERVER, 5000, "CompactionHookContext", newer=True),
    BuiltinEvent(EVENT_MESSAGE_BEFORE_RESPONSE, _TRANSFORMER, 200, "BeforeResponseContext"),
    BuiltinEvent(
        EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM, _TRANSFORMER, 200, "FinalResponseTransformContext", newer=True
    ),
    BuiltinEvent(EVENT_MESSAGE_AFTER_RESPONSE, _OBSERVER, 3000, "AfterResponseContext"),
    BuiltinEvent(EVENT_MESSAGE_CANCELLED, _OBSERVER, 3000, "CancelledResponseContext", newer=True),
    BuiltinEvent(EVENT_SESSION_STARTED, _OBSERVER, 5000, "SessionHookContext", newer=True),
    BuiltinEvent(EVENT_AGENT_STARTED, _OBSERVER, 5000, "AgentLifecycleContext"),
    BuiltinEvent(EVENT_BOT_READY, _OBSERVER, 5000, "AgentLifecycleContext"),
    BuiltinEvent(EVENT_AGENT_STOPPED, _OBSERVER, 5000, "AgentLifecycleContext"),
    BuiltinEvent(EVENT_CONFIG_RELOADED, _OBSERVER, 5000, "ConfigReloadedContext"),
    BuiltinEvent(EVENT_SCHEDULE_FIRED, _OBSERVER, 1000, "ScheduleFiredContext"),
    BuiltinEvent(EVENT_REACTION_RECEIVED, _OBSERVER, 500, "ReactionReceivedContext"),
    BuiltinEvent(EVENT_ROOM_MEMBER_JOINED, _OBSERVER, 3000, "RoomMemberJoinedContext", newer=True),
    BuiltinEvent(EVENT_ROOM_MEMBER_LEFT, _OBSERVER, 3000, "RoomMemberLeftContext", newer=True),
    BuiltinEvent(EVENT_TOOL_BEFORE_CALL, _GATE, 200, "ToolBeforeCallContext"),
    BuiltinEvent(EVENT_TOOL_ENVIRONMENT, _COLLECTOR, 200, "ToolEnvironmentContext", newer=True),
    BuiltinEvent(EVENT_TOOL_AFTER_CALL, _OBSERVER, 300, "ToolAfterCallContext"),
    BuiltinEvent(EVENT_MODEL_BEFORE_CALL, _GATE, 500, "ModelBeforeCallContext", own=True),
    BuiltinEvent(EVENT_MODEL_AFTER_CALL, _OBSERVER, 500, "ModelAfterCallContext", own=True),
)
"""Every built-in event, in the order a turn meets them (its end: answered, cancelled, session stored), then
lifecycle, schedule, reaction, room-membership and tool events (a tool call: gate, environment, result), then
the daemon's own model-call events (one round-trip: gate, reply)."""

_MODES: Final = {event.name: event.mode for event in EVENT_TABLE}
DEFAULT_TIMEOUTS_MS: Final = {event.name: event.timeout_ms for event in EVENT_TABLE}
CUSTOM_EVENT_TIMEOUT_MS: Final = 1000
PIPELINE_ORDER: Final = tuple(event.name for event in EVENT_TABLE)
"""Built-in events in the table's order (how operators' views sort them)."""
BUILTIN_EVENTS: Final = frozenset(_MODES)
NEWER_EVENTS: Final = frozenset(event.name for event in EVENT_TABLE if event.newer)
"""The events the 2026 plugin API added to the twelve of the hooks spec."""
OWN_EVENTS: Final = frozenset(event.name for event in EVENT_TABLE if event.own)
"""The daemon's own events, which MindRoom's plugin API does not have."""
EVENT_CONSTANTS: Final = tuple(sorted(event.constant for event in EVENT_TABLE if not event.own))
"""The names of MindRoom's events' constants, which `mindroom.hooks` and `mindroom.plugin_api` export."""
HOOK_CONTEXTS: Final = tuple(
    dict.fromkeys([*(event.context for event in EVENT_TABLE if not event.own), "CustomEventContext"])
)
"""The context class names hooks of MindRoom's events receive: each built-in event's, then custom events'."""
OWN_EVENT_CONSTANTS: Final = tuple(sorted(event.constant for event in EVENT_TABLE if event.own))
"""The names of the daemon's own events' constants, which `mindroom.hooks` exports."""
OWN_HOOK_CONTEXTS: Final = tuple(dict.fromkeys(event.context for event in EVENT_TABLE if event.own))
"""The context class names hooks of the daemon's own events receive."""
REQUIRED_HOOK_EVENTS: Final = frozenset({EVENT_AGENT_STARTED})
"""Events whose hooks may be declared `required=True`: a failure then fails the bot's start."""
RESERVED_NAMESPACES: Final = frozenset(
    {
        "message",
        "agent",
        "bot",
        "schedule",
        "reaction",
        "config",
        "tool",
        "system",
        "compaction",
        "room",
        "session",
        "model",
    }
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


def _export_key(name: str) -> tuple[int, list[int | str]]:
    category = 0 if name.upper() == name else 1 if name[0].isupper() else 2
    return category, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def export_order(names: Iterable[str]) -> list[str]:
    """`names` in the order an `__all__` keeps them: constants, then classes, then the rest (as ruff sorts)."""
    return sorted(set(names), key=_export_key)


__all__ = export_order(
    [
        *EVENT_CONSTANTS,
        *OWN_EVENT_CONSTANTS,
        "BUILTIN_EVENTS",
        "CUSTOM_EVENT_TIMEOUT_MS",
        "DEFAULT_TIMEOUTS_MS",
        "EVENT_TABLE",
        "HOOK_CONTEXTS",
        "NEWER_EVENTS",
        "OWN_EVENTS",
        "OWN_EVENT_CONSTANTS",
        "OWN_HOOK_CONTEXTS",
        "PIPELINE_ORDER",
        "REQUIRED_HOOK_EVENTS",
        "RESERVED_NAMESPACES",
        "BuiltinEvent",
        "EVENT_CONSTANTS",
        "HookExecutionMode",
        "default_timeout_ms",
        "execution_mode",
        "export_order",
        "is_custom_event",
        "validate_event_name",
    ]
)
