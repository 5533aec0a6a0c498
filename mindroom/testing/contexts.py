"""Building ready-to-emit hook contexts from flat keywords (the engine of `hook_context_factory`).

Every context class of both API generations is known by class and by name. Message fields (`body`,
`room_id`, `thread_id`, ...) land in the envelope wherever a context carries one (`ctx.envelope`,
`ctx.draft.envelope`, `ctx.result.envelope`, `ctx.info.envelope`); the fields of a draft, a result or a
cancellation's info are taken flat too. Contexts without an envelope take the same-named keywords as
their own fields. An unknown keyword is a `TypeError` naming it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mindroom.hooks as hooks
from mindroom.constants import RuntimePaths
from mindroom.hooks.context import (
    AgentLifecycleContext,
    CompactionHookContext,
    CustomEventContext,
    HistoryScope,
    MessageEnvelope,
    ReactionReceivedContext,
    RoomMemberJoinedContext,
    RoomMemberLeftContext,
    ScheduleFiredContext,
    SessionHookContext,
    SystemEnrichContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    ToolEnvironmentContext,
)
from mindroom.hooks.hook_context import HookContext, HookContextBase
from mindroom.hooks.older_envelope import ORIGIN_NAMES, TARGET_NAMES
from mindroom.hooks.target import session_id_for
from mindroom.logging_config import get_logger

__all__ = ["CONTEXT_TYPES", "make_hook_context"]

CONTEXT_TYPES: Mapping[str, type[HookContextBase]] = {
    name: value
    for name in hooks.__all__
    if isinstance(value := getattr(hooks, name), type)
    and issubclass(value, HookContextBase)
    and value not in (HookContextBase, HookContext)
    and name.endswith("Context")  # not a shared base such as ModelCallScope
}
"""Every hook context the hooks package exports, by class name."""

_ROOM = "!room:localhost"
_AGENT = "code"
_USER = "@user:localhost"

# The envelope takes its own fields and the hooks spec's flat names; a draft, result or info takes its own.
_ENVELOPE_KEYWORDS = frozenset(f.name for f in dataclasses.fields(MessageEnvelope) if f.init) | set(
    TARGET_NAMES + ORIGIN_NAMES
)
_ENVELOPE_DEFAULTS: dict[str, Any] = {
    "source_event_id": "$event:localhost",
    "room_id": _ROOM,
    "thread_id": None,
    "resolved_thread_id": None,
    "requester_id": _USER,
    "body": "hello",
    "attachment_ids": (),
    "mentioned_agents": (),
    "agent_name": _AGENT,
    "source_kind": "message",
}
_WRAPPED_DEFAULTS: dict[str, Any] = {
    "response_text": "",
    "response_kind": "ai",
    "tool_trace": None,
    "extra_content": None,
    "suppress": False,
    "response_event_id": "$response:localhost",
    "delivery_kind": "sent",
}


@dataclasses.dataclass(frozen=True, slots=True)
class _MessageShape:
    """How a context holds its message: in an `envelope` field, and in a draft, result or info around it."""

    has_envelope: bool
    wrapper: tuple[str, type] | None = None
    wrapper_keywords: frozenset[str] = frozenset()


def _message_shape(cls: type) -> _MessageShape | None:
    """Read from the context's field types; None for a context without a message."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    has_envelope = hints.get("envelope") is MessageEnvelope
    for name in names:
        kind = hints[name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            own = {f.name for f in dataclasses.fields(kind)}
            if "envelope" in own:
                return _MessageShape(has_envelope, (name, kind), frozenset(own - {"envelope"}))
    return _MessageShape(has_envelope) if has_envelope else None


_MESSAGE_SHAPES = {cls: _message_shape(cls) for cls in CONTEXT_TYPES.values()}
_TOOL_SCOPE = {"agent_name": _AGENT, "room_id": _ROOM, "requester_id": _USER}
_CONVERSATION_SCOPE = {"agent_name": _AGENT, "room_id": _ROOM}
_SCOPE_DEFAULTS: dict[type, dict[str, Any]] = {
    ToolBeforeCallContext: _TOOL_SCOPE,
    ToolAfterCallContext: _TOOL_SCOPE,
    ToolEnvironmentContext: _TOOL_SCOPE,
    ScheduleFiredContext: {"room_id": _ROOM, "agent_name": _AGENT},
    ReactionReceivedContext: {"room_id": _ROOM, "agent_name": _AGENT},
    AgentLifecycleContext: {"entity_name": _AGENT},
    CustomEventContext: {"room_id": _ROOM, "agent_name": _AGENT},
    SessionHookContext: _CONVERSATION_SCOPE,
    CompactionHookContext: _CONVERSATION_SCOPE,
    RoomMemberJoinedContext: {
        "agent_name": "router",
        "room_id": _ROOM,
        "event_id": "$member:localhost",
        "user_id": _USER,
        "membership": "join",
    },
    RoomMemberLeftContext: {
        "agent_name": "router",
        "room_id": _ROOM,
        "event_id": "$member:localhost",
        "user_id": _USER,
        "membership": "leave",
        "prev_membership": "join",
    },
}


def _resolve_type(context_type: type[HookContextBase] | str) -> type[HookContextBase]:
    if isinstance(context_type, str):
        try:
            return CONTEXT_TYPES[context_type]
        except KeyError:
            msg = f"unknown context type {context_type!r}; known: {', '.join(sorted(CONTEXT_TYPES))}"
            raise TypeError(msg) from None
    if isinstance(context_type, type) and issubclass(context_type, HookContextBase):
        return context_type
    msg = f"expected a hook context class or its name, got {context_type!r}"
    raise TypeError(msg)


def _build_envelope(fields: dict[str, Any]) -> MessageEnvelope:
    given = {name: fields.pop(name) for name in list(fields) if name in _ENVELOPE_KEYWORDS}
    values = dict(_ENVELOPE_DEFAULTS)
    # A given target or origin stands for its flat names: their defaults would contradict it.
    for whole, names in (("target", TARGET_NAMES), ("origin", ORIGIN_NAMES)):
        if whole in given:
            for name in names:
                values.pop(name, None)
    values.update(given)
    if "origin" not in given:
        values.setdefault("sender_id", values["requester_id"])
    values["attachment_ids"] = tuple(values["attachment_ids"])
    values["mentioned_agents"] = tuple(values["mentioned_agents"])
    return MessageEnvelope(**values)


def _envelope_fields(cls: type, shape: _MessageShape, fields: dict[str, Any]) -> dict[str, Any]:
    """The envelope (built from flat message fields unless given), and what wraps it, for a message context."""
    wrapped = {name: fields.pop(name) for name in list(fields) if name in shape.wrapper_keywords}
    envelope = fields.pop("envelope", None) or _build_envelope(fields)
    kwargs: dict[str, Any] = {"envelope": envelope} if shape.has_envelope else {}
    if shape.wrapper is not None and shape.wrapper[0] not in fields:
        name, wrapper_type = shape.wrapper
        values = {**{k: v for k, v in _WRAPPED_DEFAULTS.items() if k in shape.wrapper_keywords}, **wrapped}
        kwargs[name] = wrapper_type(envelope=envelope, **values)
    if cls is SystemEnrichContext and "target_entity_name" not in fields:
        kwargs["target_entity_name"] = envelope.agent_name
    return kwargs


def _scope_fields(cls: type, fields: dict[str, Any]) -> dict[str, Any]:
    """Defaults for a context without an envelope; each can be given by its own name."""
    kwargs = dict(_SCOPE_DEFAULTS.get(cls, {}))
    if cls is AgentLifecycleContext and "agent_name" in fields:
        kwargs["entity_name"] = fields.pop("agent_name")
    if cls in (SessionHookContext, CompactionHookContext):
        agent = fields.get("agent_name", kwargs["agent_name"])
        kwargs.setdefault("scope", HistoryScope("agent", agent))
        if "session_id" not in fields:
            room = fields.get("room_id", kwargs["room_id"])
            kwargs["session_id"] = session_id_for(room, fields.get("thread_id"))
    if cls in (RoomMemberJoinedContext, RoomMemberLeftContext) and "sender_id" not in fields:
        kwargs["sender_id"] = fields.get("user_id", kwargs["user_id"])
    return kwargs


def make_hook_context(
    context_type: type[HookContextBase] | str, /, *, storage_root: Path, **fields: Any
) -> HookContextBase:
    """Build a context of `context_type` with spec defaults; flat message fields land in the envelope."""
    cls = _resolve_type(context_type)
    own_fields = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    if "runtime_paths" not in fields:
        config_path = storage_root.parent / "config.yaml"
        kwargs["runtime_paths"] = RuntimePaths(config_path=config_path, storage_root=storage_root)
    # A plugin's own subclass holds its message as the context it extends does.
    shape = next((_MESSAGE_SHAPES[base] for base in cls.__mro__ if base in _MESSAGE_SHAPES), None)
    if shape is not None:
        kwargs.update(_envelope_fields(cls, shape, fields))
    else:
        kwargs.update(_scope_fields(cls, fields))
    unknown = sorted(set(fields) - own_fields)
    if unknown:
        msg = f"{cls.__name__} has no field {unknown[0]!r} (unknown keywords: {', '.join(unknown)})"
        raise TypeError(msg)
    kwargs.update(fields)
    if "logger" not in kwargs:
        event_name = kwargs.get("event_name") or cls.DEFAULT_EVENT
        kwargs["logger"] = get_logger("mindroom.plugins.test", event_name=event_name)
    return cls(**kwargs)
