"""Transport objects: the message, the draft and the delivered result that hook contexts carry.

The kinds are typed as `Literal`s for readers and type checkers; values are not checked at runtime,
so an older or newer daemon's kinds still pass through.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from mindroom.hooks.origin import TurnOrigin
from mindroom.hooks.target import MessageTarget

__all__ = [
    "DeliveryKind",
    "MessageEnvelope",
    "MessageTarget",
    "ResponseDraft",
    "ResponseKind",
    "ResponseResult",
    "SourceKind",
    "ToolTraceEntry",
    "new_correlation_id",
]

_MISSING: Any = object()

SourceKind = Literal[
    "message",
    "edit",
    "voice",
    "image",
    "file",
    "video",
    "media",
    "scheduled",
    "silent_scheduled",
    "hook",
    "hook_dispatch",
    "external_trigger",
    "trusted_internal_relay",
    "interactive_selection",
]
ResponseKind = Literal["ai", "team", "router", "system"]
DeliveryKind = Literal["sent", "edited"]


def new_correlation_id() -> str:
    """A fresh unique id for one inbound event."""
    return uuid.uuid4().hex


_FLAT = ("room_id", "thread_id", "resolved_thread_id", "requester_id", "sender_id", "source_kind")


def _older_shape(
    envelope: MessageEnvelope,
    source_event_id: str,
    room_id: str,
    thread_id: str | None,
    resolved_thread_id: str | None,
    requester_id: str,
    sender_id: str,
    body: str,
    attachment_ids: tuple[str, ...],
    mentioned_agents: tuple[str, ...],
    agent_name: str,
    source_kind: str,
    hook_source: str | None = None,
    message_received_depth: int = 0,
    dispatch_policy_source_kind: str | None = None,
    *,
    origin: TurnOrigin | None = None,
    _target: MessageTarget | None = None,
    _origin: TurnOrigin | None = None,
) -> None:
    """Bind the hooks spec's shape (plus what `dataclasses.replace` passes) and store it."""
    target = None
    if _target is not None and (room_id, thread_id, resolved_thread_id) == (
        _target.room_id,
        _target.source_thread_id,
        _target.resolved_thread_id,
    ):
        target = _target  # `replace` changed no field the target holds: keep what only it knows
    if origin is not None:
        requester_id, sender_id, source_kind = origin.requester_id, origin.transport_sender_id, origin.source_kind
    elif _origin is not None and (requester_id, sender_id, source_kind) == (
        _origin.requester_id,
        _origin.transport_sender_id,
        _origin.source_kind,
    ):
        origin = _origin
    _store(
        envelope,
        source_event_id,
        room_id,
        thread_id,
        resolved_thread_id,
        requester_id,
        sender_id,
        body,
        attachment_ids,
        mentioned_agents,
        agent_name,
        source_kind,
        hook_source,
        message_received_depth,
        dispatch_policy_source_kind,
        target,
        origin,
    )


def _newer_shape(
    envelope: MessageEnvelope,
    source_event_id: str,
    target: MessageTarget,
    body: str,
    attachment_ids: tuple[str, ...],
    mentioned_agents: tuple[str, ...],
    agent_name: str,
    hook_source: str | None = None,
    message_received_depth: int = 0,
    dispatch_policy_source_kind: str | None = None,
    *,
    origin: TurnOrigin | None = _MISSING,
    **flat: Any,
) -> None:
    """Bind the 2026 API's shape and store it; flat fields may come along (`dataclasses.replace` passes them)."""
    if not isinstance(target, MessageTarget):
        msg = f"MessageEnvelope target must be a MessageTarget, got {type(target).__name__}"
        raise TypeError(msg)
    unknown = set(flat) - {*_FLAT, "_target", "_origin"}
    if unknown:
        msg = f"MessageEnvelope() got unexpected keyword arguments: {', '.join(sorted(unknown))}"
        raise TypeError(msg)
    if origin is _MISSING or origin is None:
        replaced = flat.get("_origin")
        if replaced is None and not {"requester_id", "sender_id", "source_kind"} <= set(flat):
            msg = "MessageEnvelope(source_event_id, target, ...) needs the keyword origin=TurnOrigin(...), not None"
            raise TypeError(msg)
        origin = replaced or TurnOrigin.from_envelope_fields(
            flat["sender_id"], flat["requester_id"], flat["source_kind"]
        )
    if not isinstance(origin, TurnOrigin):
        msg = f"MessageEnvelope origin must be a TurnOrigin, got {type(origin).__name__}"
        raise TypeError(msg)
    _store(
        envelope,
        source_event_id,
        target.room_id,
        target.source_thread_id,
        target.resolved_thread_id,
        origin.requester_id,
        origin.transport_sender_id,
        body,
        attachment_ids,
        mentioned_agents,
        agent_name,
        origin.source_kind,
        hook_source,
        message_received_depth,
        dispatch_policy_source_kind,
        target,
        origin,
    )


def _store(
    envelope: MessageEnvelope,
    source_event_id: str,
    room_id: str,
    thread_id: str | None,
    resolved_thread_id: str | None,
    requester_id: str,
    sender_id: str,
    body: str,
    attachment_ids: tuple[str, ...],
    mentioned_agents: tuple[str, ...],
    agent_name: str,
    source_kind: str,
    hook_source: str | None,
    message_received_depth: int,
    dispatch_policy_source_kind: str | None,
    target: MessageTarget | None,
    origin: TurnOrigin | None,
) -> None:
    """Set every field of the frozen envelope, one statement per field as dataclasses' own `__init__` does
    (this runs for every message)."""
    put = object.__setattr__
    put(envelope, "source_event_id", source_event_id)
    put(envelope, "room_id", room_id)
    put(envelope, "thread_id", thread_id)
    put(envelope, "resolved_thread_id", resolved_thread_id)
    put(envelope, "requester_id", requester_id)
    put(envelope, "sender_id", sender_id)
    put(envelope, "body", body)
    put(envelope, "attachment_ids", attachment_ids)
    put(envelope, "mentioned_agents", mentioned_agents)
    put(envelope, "agent_name", agent_name)
    put(envelope, "source_kind", source_kind)
    put(envelope, "hook_source", hook_source)
    put(envelope, "message_received_depth", message_received_depth)
    put(envelope, "dispatch_policy_source_kind", dispatch_policy_source_kind)
    put(envelope, "_target", target)
    put(envelope, "_origin", origin)


@dataclass(frozen=True, slots=True, init=False)
class MessageEnvelope:
    """One inbound message, normalized, as every message hook sees it.

    Two constructor shapes work. The hooks spec's: `MessageEnvelope(source_event_id, room_id, thread_id,
    resolved_thread_id, requester_id, sender_id, body, attachment_ids, mentioned_agents, agent_name,
    source_kind, hook_source=None, message_received_depth=0)`. The 2026 API's: `MessageEnvelope(
    source_event_id, target, body, attachment_ids, mentioned_agents, agent_name, hook_source=None,
    message_received_depth=0, dispatch_policy_source_kind=None, *, origin)`. Every name of both reads the
    same message: `target` and `origin` are derived from the flat fields when not given, and given ones set
    the flat fields. `dataclasses.replace` keeps them unless it changes a flat field they contradict, and
    `replace(envelope, origin=...)` or `target=...` replaces them.
    """

    source_event_id: str
    room_id: str
    thread_id: str | None
    resolved_thread_id: str | None
    requester_id: str
    sender_id: str
    body: str
    attachment_ids: tuple[str, ...]
    mentioned_agents: tuple[str, ...]
    agent_name: str
    source_kind: SourceKind
    hook_source: str | None = None
    message_received_depth: int = 0
    dispatch_policy_source_kind: str | None = None
    # Given at construction or derived on first read; `replace` passes them back to `__init__`.
    _target: MessageTarget | None = field(default=None, repr=False, compare=False)
    _origin: TurnOrigin | None = field(default=None, repr=False, compare=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "target" in kwargs or (len(args) > 1 and isinstance(args[1], MessageTarget)):
            _newer_shape(self, *args, **kwargs)
        else:
            _older_shape(self, *args, **kwargs)

    @property
    def target(self) -> MessageTarget:
        """Where the message lives and where its answer goes (the answer replies to `source_event_id`)."""
        target = self._target
        if target is None:
            target = MessageTarget(self.room_id, self.thread_id, self.resolved_thread_id, self.source_event_id or None)
            object.__setattr__(self, "_target", target)
        return target

    @property
    def origin(self) -> TurnOrigin:
        """Who sent the message, for whom, how far it is trusted and what it is for."""
        origin = self._origin
        if origin is None:
            origin = TurnOrigin.from_envelope_fields(self.sender_id, self.requester_id, self.source_kind)
            object.__setattr__(self, "_origin", origin)
        return origin

    def _key(self) -> tuple[Any, ...]:
        return (
            self.source_event_id,
            self.body,
            self.attachment_ids,
            self.mentioned_agents,
            self.agent_name,
            self.hook_source,
            self.message_received_depth,
            self.dispatch_policy_source_kind,
            self.target,
            self.origin,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageEnvelope):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True, slots=True)
class ToolTraceEntry:
    """One tool call made while generating a response."""

    tool_name: str
    args_preview: str = ""
    result_preview: str | None = None
    error: str | None = None
    blocked: bool = False
    duration_ms: float = 0.0


@dataclass(slots=True)
class ResponseDraft:
    """A generated response before it is sent; `message:before_response` hooks may edit or replace it."""

    response_text: str
    response_kind: ResponseKind
    tool_trace: list[ToolTraceEntry] | None
    extra_content: dict[str, Any] | None
    envelope: MessageEnvelope
    suppress: bool = False

    def copy(self) -> ResponseDraft:
        """A copy whose fields and top-level containers can be edited without touching this one."""
        return ResponseDraft(
            self.response_text,
            self.response_kind,
            None if self.tool_trace is None else list(self.tool_trace),
            None if self.extra_content is None else dict(self.extra_content),
            self.envelope,
            self.suppress,
        )


@dataclass(frozen=True, slots=True)
class ResponseResult:
    """What was delivered to Matrix, as `message:after_response` hooks see it."""

    response_text: str
    response_event_id: str
    delivery_kind: DeliveryKind
    response_kind: ResponseKind
    envelope: MessageEnvelope
