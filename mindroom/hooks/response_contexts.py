"""Contexts of the 2026 API around one answer: `system:enrich`, the streamed answer's final transform, cancellation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from mindroom.hooks.enrichment import CachePolicy, EnrichmentItem
from mindroom.hooks.hook_context import HookContext, _MessageContext, _placeholder_envelope
from mindroom.hooks.transport import MessageEnvelope, ResponseKind
from mindroom.hooks.types import EVENT_MESSAGE_CANCELLED, EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM, EVENT_SYSTEM_ENRICH

__all__ = [
    "CancelledResponseContext",
    "CancelledResponseInfo",
    "FinalResponseDraft",
    "FinalResponseTransformContext",
    "SystemEnrichContext",
]


@dataclass(slots=True, kw_only=True)
class SystemEnrichContext(_MessageContext):
    """`system:enrich`: add instructions to this turn's system prompt with `add_instruction()` or return items.

    `target_member_names` lists a team's members, and is None for a single agent.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_SYSTEM_ENRICH
    # A return value other than items is ignored here (not a failure, as in `message:enrich`).
    IGNORES_INVALID_RESULT: ClassVar[bool] = True

    target_entity_name: str = ""
    target_member_names: tuple[str, ...] | None = None
    items: list[EnrichmentItem] = field(default_factory=list, repr=False)

    def add_instruction(self, key: str, text: str, *, cache_policy: CachePolicy = "volatile") -> None:
        """Add one item to the `<mindroom_system_context>` block of this turn's system prompt."""
        self.items.append(EnrichmentItem(key=key, text=text, cache_policy=cache_policy))

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The entity the turn is for (the team, for a team turn) and the room."""
        return self.target_entity_name or self.envelope.agent_name, self.envelope.room_id

    def collector_copy(self) -> SystemEnrichContext:
        """One hook's copy, with its own empty item list."""
        copy = self.clone()
        assert isinstance(copy, SystemEnrichContext)
        copy.items = []
        return copy


@dataclass(slots=True)
class FinalResponseDraft:
    """The text a streamed answer ends with; `message:final_response_transform` hooks may change the text."""

    response_text: str
    response_kind: ResponseKind
    envelope: MessageEnvelope

    def copy(self) -> FinalResponseDraft:
        """A copy to edit (the envelope is frozen and shared)."""
        return FinalResponseDraft(self.response_text, self.response_kind, self.envelope)


@dataclass(slots=True, kw_only=True)
class FinalResponseTransformContext(_MessageContext):
    """`message:final_response_transform`: change `draft.response_text` of a streamed answer's last edit.

    Only the text is read back; it cannot suppress, redact or delete the answer.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM

    draft: FinalResponseDraft = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        HookContext.__post_init__(self)
        if self.draft is None:
            self.draft = FinalResponseDraft("", "ai", self.envelope)
        elif self.envelope.source_event_id == "" and self.draft.envelope.source_event_id != "":
            self.envelope = self.draft.envelope


@dataclass(frozen=True, slots=True)
class CancelledResponseInfo:
    """An answer that ended cancelled or failed: what it answered, what became visible, and why."""

    envelope: MessageEnvelope
    visible_response_event_id: str | None = None
    response_kind: str = "ai"
    failure_reason: str | None = None


def _placeholder_info() -> CancelledResponseInfo:
    return CancelledResponseInfo(_placeholder_envelope())


@dataclass(slots=True, kw_only=True)
class CancelledResponseContext(HookContext):
    """`message:cancelled`: an answer ended `cancelled` or `error` (`info.failure_reason` says why)."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MESSAGE_CANCELLED
    FROZEN: ClassVar[bool] = True

    info: CancelledResponseInfo = field(default_factory=_placeholder_info)

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The answering agent and the room."""
        return self.info.envelope.agent_name, self.info.envelope.room_id

    def _synthetic_depth(self) -> int:
        return self.info.envelope.message_received_depth + 1

    def _original_sender(self) -> str | None:
        return self.info.envelope.requester_id or None
