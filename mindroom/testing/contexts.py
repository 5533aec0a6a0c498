"""Building ready-to-emit hook contexts from flat keywords (the engine of `hook_context_factory`).

Every context class of both API generations is known by class and by name. Message fields (`body`,
`room_id`, `thread_id`, ...) land in the envelope wherever a context carries one (`ctx.envelope`,
`ctx.draft.envelope`, `ctx.result.envelope`, `ctx.info.envelope`); the fields of a draft, a result or a
cancellation's info are taken flat too. Contexts without an envelope take the same-named keywords as
their own fields. An unknown keyword is a `TypeError` naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.constants import RuntimePaths
from mindroom.hooks.context import (
    AfterResponseContext,
    AgentLifecycleContext,
    BeforeResponseContext,
    CancelledResponseContext,
    CancelledResponseInfo,
    CompactionHookContext,
    ConfigReloadedContext,
    CustomEventContext,
    FinalResponseDraft,
    FinalResponseTransformContext,
    HistoryScope,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ReactionReceivedContext,
    ResponseDraft,
    ResponseResult,
    RoomMemberJoinedContext,
    RoomMemberLeftContext,
    ScheduleFiredContext,
    SessionHookContext,
    SystemEnrichContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
    ToolEnvironmentContext,
)
from mindroom.hooks.hook_context import HookContextBase
from mindroom.hooks.target import session_id_for
from mindroom.logging_config import get_logger

__all__ = ["CONTEXT_TYPES", "make_hook_context"]

CONTEXT_TYPES: Mapping[str, type[HookContextBase]] = {
    cls.__name__: cls
    for cls in (
        MessageReceivedContext,
        MessageEnrichContext,
        SystemEnrichContext,
        BeforeResponseContext,
        FinalResponseTransformContext,
        AfterResponseContext,
        CancelledResponseContext,
        AgentLifecycleContext,
        SessionHookContext,
        CompactionHookContext,
        ScheduleFiredContext,
        ReactionReceivedContext,
        RoomMemberJoinedContext,
        RoomMemberLeftContext,
        ConfigReloadedContext,
        CustomEventContext,
        ToolBeforeCallContext,
        ToolAfterCallContext,
        ToolEnvironmentContext,
    )
}

_ROOM = "!room:localhost"
_AGENT = "code"
_USER = "@user:localhost"

_ENVELOPE_FIELDS = frozenset(f.name for f in dataclasses.fields(MessageEnvelope))
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
# The keywords that belong to the object a context wraps around its envelope, per context class.
_WRAPPED_FIELDS: dict[type, frozenset[str]] = {
    BeforeResponseContext: frozenset({"response_text", "response_kind", "tool_trace", "extra_content", "suppress"}),
    FinalResponseTransformContext: frozenset({"response_text", "response_kind"}),
    AfterResponseContext: frozenset({"response_text", "response_event_id", "delivery_kind", "response_kind"}),
    CancelledResponseContext: frozenset({"visible_response_event_id", "response_kind", "failure_reason"}),
}
_WRAPPER_NAMES = {
    BeforeResponseContext: "draft",
    FinalResponseTransformContext: "draft",
    AfterResponseContext: "result",
    CancelledResponseContext: "info",
}
_ENVELOPE_CONTEXTS = (
    MessageReceivedContext,
    MessageEnrichContext,
    SystemEnrichContext,
    BeforeResponseContext,
    FinalResponseTransformContext,
    AfterResponseContext,
    CancelledResponseContext,
)
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
    values = {**_ENVELOPE_DEFAULTS, **{k: fields.pop(k) for k in list(fields) if k in _ENVELOPE_FIELDS}}
    values.setdefault("sender_id", values["requester_id"])
    values["attachment_ids"] = tuple(values["attachment_ids"])
    values["mentioned_agents"] = tuple(values["mentioned_agents"])
    return MessageEnvelope(**values)


def _wrapped(cls: type, envelope: MessageEnvelope, values: dict[str, Any]) -> Any:
    """The draft, result or info a context wraps around its envelope, from the flat keywords given."""
    if cls is BeforeResponseContext:
        return ResponseDraft(
            response_text=values.get("response_text", ""),
            response_kind=values.get("response_kind", "ai"),
            tool_trace=values.get("tool_trace"),
            extra_content=values.get("extra_content"),
            envelope=envelope,
            suppress=values.get("suppress", False),
        )
    if cls is FinalResponseTransformContext:
        return FinalResponseDraft(values.get("response_text", ""), values.get("response_kind", "ai"), envelope)
    if cls is AfterResponseContext:
        return ResponseResult(
            response_text=values.get("response_text", ""),
            response_event_id=values.get("response_event_id", "$response:localhost"),
            delivery_kind=values.get("delivery_kind", "sent"),
            response_kind=values.get("response_kind", "ai"),
            envelope=envelope,
        )
    return CancelledResponseInfo(
        envelope,
        visible_response_event_id=values.get("visible_response_event_id"),
        response_kind=values.get("response_kind", "ai"),
        failure_reason=values.get("failure_reason"),
    )


def _envelope_fields(cls: type, fields: dict[str, Any]) -> dict[str, Any]:
    """The envelope (built from flat message fields unless given), and what wraps it, for a message context."""
    wrapped = {k: fields.pop(k) for k in list(fields) if k in _WRAPPED_FIELDS.get(cls, ())}
    envelope = fields.pop("envelope", None) or _build_envelope(fields)
    kwargs: dict[str, Any] = {} if cls is CancelledResponseContext else {"envelope": envelope}
    wrapper = _WRAPPER_NAMES.get(cls)
    if wrapper is not None and wrapper not in fields:
        kwargs[wrapper] = _wrapped(cls, envelope, wrapped)
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
    if issubclass(cls, _ENVELOPE_CONTEXTS):
        kwargs.update(_envelope_fields(cls, fields))
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
