"""Building ready-to-emit hook contexts from flat keywords (the engine of `hook_context_factory`)."""

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
    ConfigReloadedContext,
    CustomEventContext,
    HookContext,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ReactionReceivedContext,
    ResponseDraft,
    ResponseResult,
    ScheduleFiredContext,
    ToolAfterCallContext,
    ToolBeforeCallContext,
)
from mindroom.logging_config import get_logger

__all__ = ["CONTEXT_TYPES", "make_hook_context"]

CONTEXT_TYPES: Mapping[str, type[HookContext]] = {
    cls.__name__: cls
    for cls in (
        MessageReceivedContext,
        MessageEnrichContext,
        BeforeResponseContext,
        AfterResponseContext,
        AgentLifecycleContext,
        ScheduleFiredContext,
        ReactionReceivedContext,
        ConfigReloadedContext,
        ToolBeforeCallContext,
        ToolAfterCallContext,
        CustomEventContext,
    )
}

_ENVELOPE_FIELDS = frozenset(f.name for f in dataclasses.fields(MessageEnvelope))
_ENVELOPE_DEFAULTS: dict[str, Any] = {
    "source_event_id": "$event:localhost",
    "room_id": "!room:localhost",
    "thread_id": None,
    "resolved_thread_id": None,
    "requester_id": "@user:localhost",
    "body": "hello",
    "attachment_ids": (),
    "mentioned_agents": (),
    "agent_name": "code",
    "source_kind": "message",
}
_DRAFT_FIELDS = {"response_text", "response_kind", "tool_trace", "extra_content", "suppress"}
_RESULT_FIELDS = {"response_text", "response_event_id", "delivery_kind", "response_kind"}
_MESSAGE_CONTEXTS = (MessageReceivedContext, MessageEnrichContext, BeforeResponseContext, AfterResponseContext)
_SCOPE_DEFAULTS: dict[type, dict[str, Any]] = {
    ToolBeforeCallContext: {"agent_name": "code", "room_id": "!room:localhost", "requester_id": "@user:localhost"},
    ToolAfterCallContext: {"agent_name": "code", "room_id": "!room:localhost", "requester_id": "@user:localhost"},
    ScheduleFiredContext: {"room_id": "!room:localhost", "agent_name": "code"},
    ReactionReceivedContext: {"room_id": "!room:localhost", "agent_name": "code"},
    AgentLifecycleContext: {"entity_name": "code"},
    CustomEventContext: {"room_id": "!room:localhost", "agent_name": "code"},
}
_HELPER_FIELDS = {"message_sender", "room_state_querier", "room_state_putter"}


def _resolve_type(context_type: type[HookContext] | str) -> type[HookContext]:
    if isinstance(context_type, str):
        try:
            return CONTEXT_TYPES[context_type]
        except KeyError:
            msg = f"unknown context type {context_type!r}; known: {', '.join(sorted(CONTEXT_TYPES))}"
            raise TypeError(msg) from None
    if isinstance(context_type, type) and issubclass(context_type, HookContext):
        return context_type
    msg = f"expected a hook context class or its name, got {context_type!r}"
    raise TypeError(msg)


def _build_envelope(fields: dict[str, Any]) -> MessageEnvelope:
    values = {**_ENVELOPE_DEFAULTS, **{k: fields.pop(k) for k in list(fields) if k in _ENVELOPE_FIELDS}}
    values.setdefault("sender_id", values["requester_id"])
    values["attachment_ids"] = tuple(values["attachment_ids"])
    values["mentioned_agents"] = tuple(values["mentioned_agents"])
    return MessageEnvelope(**values)


def make_hook_context(context_type: type[HookContext] | str, /, *, storage_root: Path, **fields: Any) -> HookContext:
    """Build a context of `context_type` with spec defaults; flat message fields land in the envelope."""
    cls = _resolve_type(context_type)
    own_fields = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    if "runtime_paths" not in fields:
        config_path = storage_root.parent / "config.yaml"
        kwargs["runtime_paths"] = RuntimePaths(config_path=config_path, storage_root=storage_root)
    if issubclass(cls, _MESSAGE_CONTEXTS):
        draft_values = {k: fields.pop(k) for k in list(fields) if cls is BeforeResponseContext and k in _DRAFT_FIELDS}
        result_values = {k: fields.pop(k) for k in list(fields) if cls is AfterResponseContext and k in _RESULT_FIELDS}
        envelope = fields.pop("envelope", None) or _build_envelope(fields)
        kwargs["envelope"] = envelope
        if cls is BeforeResponseContext and "draft" not in fields:
            kwargs["draft"] = ResponseDraft(
                response_text=draft_values.get("response_text", ""),
                response_kind=draft_values.get("response_kind", "ai"),
                tool_trace=draft_values.get("tool_trace"),
                extra_content=draft_values.get("extra_content"),
                envelope=envelope,
                suppress=draft_values.get("suppress", False),
            )
        if cls is AfterResponseContext and "result" not in fields:
            kwargs["result"] = ResponseResult(
                response_text=result_values.get("response_text", ""),
                response_event_id=result_values.get("response_event_id", "$response:localhost"),
                delivery_kind=result_values.get("delivery_kind", "sent"),
                response_kind=result_values.get("response_kind", "ai"),
                envelope=envelope,
            )
    else:
        defaults = dict(_SCOPE_DEFAULTS.get(cls, {}))
        if cls is AgentLifecycleContext and "agent_name" in fields:
            defaults["entity_name"] = fields.pop("agent_name")
        kwargs.update(defaults)
    unknown = sorted(set(fields) - own_fields - _HELPER_FIELDS)
    if unknown:
        msg = f"{cls.__name__} has no field {unknown[0]!r} (unknown keywords: {', '.join(unknown)})"
        raise TypeError(msg)
    kwargs.update(fields)
    if "logger" not in kwargs:
        event_name = kwargs.get("event_name") or cls.DEFAULT_EVENT
        kwargs["logger"] = get_logger("mindroom.plugins.test", event_name=event_name)
    return cls(**kwargs)
