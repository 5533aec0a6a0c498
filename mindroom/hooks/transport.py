"""Transport objects: the message, the draft and the delivered result that hook contexts carry.

`MessageEnvelope` stores the 2026 API's shape only; the hooks spec's flat shape reaches it through the
adapter in `older_envelope.py`.

The kinds are typed as `Literal`s for readers and type checkers; values are not checked at runtime,
so an older or newer daemon's kinds still pass through.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mindroom.hooks.older_envelope import accepts_older_shape
from mindroom.hooks.origin import TurnOrigin
from mindroom.hooks.target import MessageTarget

__all__ = [
    "DeliveryKind",
    "MessageEnvelope",
    "MessageTarget",
    "ResponseDraft",
    "ResponseKind",
    "ResponseResult",
    "ResponseUsage",
    "SourceKind",
    "ToolTraceEntry",
    "new_correlation_id",
]

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

# `origin` is required; its default lets `__post_init__` reject a missing one and `None` alike, after the
# target, with one message.
_NO_ORIGIN: Any = None


def new_correlation_id() -> str:
    """A fresh unique id for one inbound event."""
    return uuid.uuid4().hex


@accepts_older_shape
@dataclass(frozen=True, slots=True)
class MessageEnvelope:
    """One inbound message, normalized, as every message hook sees it.

    Its shape is the 2026 API's: the fields below, in this order, with `origin` keyword-only and required.
    The hooks spec's flat names (`room_id`, `thread_id`, `resolved_thread_id`, `requester_id`,
    `sender_id`, `source_kind`) read `target` and `origin`, and the constructor takes that spec's flat
    shape too (`older_envelope.accepts_older_shape`): `MessageEnvelope(source_event_id, room_id,
    thread_id, resolved_thread_id, requester_id, sender_id, body, attachment_ids, mentioned_agents,
    agent_name, source_kind, hook_source=None, message_received_depth=0)`. `dataclasses.replace` of a
    flat name re-derives the target or origin it contradicts.
    """

    source_event_id: str
    target: MessageTarget
    body: str
    attachment_ids: tuple[str, ...]
    mentioned_agents: tuple[str, ...]
    agent_name: str
    hook_source: str | None = None
    message_received_depth: int = 0
    dispatch_policy_source_kind: str | None = None
    origin: TurnOrigin = field(default=_NO_ORIGIN, kw_only=True)

    if TYPE_CHECKING:
        # What type checkers see of the constructor `accepts_older_shape` installs: either shape.
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.target, MessageTarget):
            msg = f"MessageEnvelope target must be a MessageTarget, got {type(self.target).__name__}"
            raise TypeError(msg)
        if not isinstance(self.origin, TurnOrigin):
            msg = f"MessageEnvelope needs the keyword origin=TurnOrigin(...), got {type(self.origin).__name__}"
            raise TypeError(msg)

    @property
    def room_id(self) -> str:
        """The room (`target.room_id`)."""
        return self.target.room_id

    @property
    def thread_id(self) -> str | None:
        """The thread the message named (`target.source_thread_id`)."""
        return self.target.source_thread_id

    @property
    def resolved_thread_id(self) -> str | None:
        """The thread the answer goes to, None for the room (`target.resolved_thread_id`)."""
        return self.target.resolved_thread_id

    @property
    def requester_id(self) -> str:
        """Who the message acts for (`origin.requester_id`)."""
        return self.origin.requester_id

    @property
    def sender_id(self) -> str:
        """The Matrix account that sent it (`origin.transport_sender_id`)."""
        return self.origin.transport_sender_id

    @property
    def source_kind(self) -> SourceKind:
        """How it arrived: a message, a voice note, a schedule, a hook... (`origin.source_kind`)."""
        return self.origin.source_kind  # type: ignore[return-value]  # kinds are not checked at runtime


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
class ResponseUsage:
    """The tokens the model spent on one answer, over every model call of its turn (tool rounds included).

    `input_tokens` counts everything the model read, `cached_tokens` the part of it served from the
    provider's prompt cache, `output_tokens` what it wrote; `model` is the configured model's id.
    """

    input_tokens: int
    output_tokens: int
    cached_tokens: int
    model: str

    @property
    def total_tokens(self) -> int:
        """Input and output together."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ResponseResult:
    """What was delivered to Matrix, as `message:after_response` hooks see it.

    `usage` is what the model spent on the answer (None for an answer no model wrote).
    """

    response_text: str
    response_event_id: str
    delivery_kind: DeliveryKind
    response_kind: ResponseKind
    envelope: MessageEnvelope
    usage: ResponseUsage | None = None
