"""Transport objects: the message, the draft and the delivered result that hook contexts carry.

The kinds are typed as `Literal`s for readers and type checkers; values are not checked at runtime,
so an older or newer daemon's kinds still pass through.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

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

SourceKind = Literal["message", "edit", "voice", "image", "file", "video", "scheduled", "hook", "hook_dispatch"]
ResponseKind = Literal["ai", "team", "router", "system"]
DeliveryKind = Literal["sent", "edited"]


def new_correlation_id() -> str:
    """A fresh unique id for one inbound event."""
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class MessageTarget:
    """Where a message lives: room, thread, and the thread it resolves to."""

    room_id: str
    thread_id: str | None
    resolved_thread_id: str | None


@dataclass(frozen=True, slots=True)
class MessageEnvelope:
    """One inbound message, normalized, as every message hook sees it."""

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

    @property
    def target(self) -> MessageTarget:
        """The room and thread this message belongs to."""
        return MessageTarget(self.room_id, self.thread_id, self.resolved_thread_id)


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
