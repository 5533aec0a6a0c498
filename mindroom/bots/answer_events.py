"""The hook events around one answer: message:enrich, system:enrich, session:started, final_response_transform,
message:cancelled for every ending that is not a delivered answer, and compaction:before/after around
the history compaction that runs before an answer when the stored history is over its token budget.

Each builds its context only when a hook listens, so a daemon without such hooks pays nothing (compaction
itself runs either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mindroom import ai
from mindroom.bots.runtime import Entity, LiveState
from mindroom.config.main import AgentSettings, ModelConfig
from mindroom.hooks.context import HookBindings, MessageEnrichContext, MessageEnvelope
from mindroom.hooks.enrichment import EnrichmentItem, render_system_context
from mindroom.hooks.execution import emit, emit_collect, emit_final_transform, emit_system_enrich
from mindroom.hooks.response_contexts import (
    CancelledResponseContext,
    CancelledResponseInfo,
    FinalResponseDraft,
    FinalResponseTransformContext,
    SystemEnrichContext,
)
from mindroom.hooks.session_contexts import CompactionHookContext, HistoryScope, SessionHookContext
from mindroom.hooks.transport import ResponseKind
from mindroom.hooks.types import (
    EVENT_COMPACTION_AFTER,
    EVENT_COMPACTION_BEFORE,
    EVENT_MESSAGE_CANCELLED,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
    EVENT_SESSION_STARTED,
    EVENT_SYSTEM_ENRICH,
)
from mindroom.logging_config import get_logger

__all__ = ["SessionProbe", "compact_before_answer", "enrich", "final_text", "report_cancelled", "system_context"]

logger = get_logger(__name__)


async def enrich(
    entity: Entity,
    live: LiveState,
    envelope: MessageEnvelope,
    bindings: HookBindings,
    correlation_id: str,
    members: tuple[str, ...] | None = None,
) -> list[EnrichmentItem]:
    """`message:enrich`: the items hooks add to this turn's user message; `members` are a team's."""
    ctx = MessageEnrichContext(
        envelope=envelope,
        target_entity_name=entity.name,
        target_member_names=members,
        correlation_id=correlation_id,
        **bindings.fields(),
    )
    return await emit_collect(live.registry, EVENT_MESSAGE_ENRICH, ctx)


async def system_context(
    entity: Entity,
    live: LiveState,
    envelope: MessageEnvelope,
    bindings: HookBindings,
    correlation_id: str,
    members: tuple[str, ...] | None = None,
) -> str:
    """`system:enrich`: the `<mindroom_system_context>` block for this turn's system prompt ("" without hooks);
    `members` are a team's."""
    if not live.registry.has_hooks(EVENT_SYSTEM_ENRICH):
        return ""
    ctx = SystemEnrichContext(
        envelope=envelope,
        target_entity_name=entity.name,
        target_member_names=members,
        correlation_id=correlation_id,
        **bindings.fields(),
    )
    return render_system_context(await emit_system_enrich(live.registry, ctx))


async def final_text(
    live: LiveState,
    envelope: MessageEnvelope,
    bindings: HookBindings,
    correlation_id: str,
    text: str,
    kind: ResponseKind,
) -> str:
    """`message:final_response_transform` for a streamed answer's final edit (the text is kept when blank)."""
    if not text.strip() or not live.registry.has_hooks(EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM):
        return text
    ctx = FinalResponseTransformContext(
        envelope=envelope,
        draft=FinalResponseDraft(text, kind, envelope),
        correlation_id=correlation_id,
        **bindings.fields(),
    )
    return await emit_final_transform(live.registry, ctx)


async def report_cancelled(
    live: LiveState,
    envelope: MessageEnvelope,
    bindings: HookBindings,
    correlation_id: str,
    reason: str,
    visible_response_event_id: str | None = None,
) -> None:
    """`message:cancelled`: the answer ended without being delivered, and why."""
    logger.info("answer ended without delivery", event_id=envelope.source_event_id, reason=reason)
    if not live.registry.has_hooks(EVENT_MESSAGE_CANCELLED):
        return
    info = CancelledResponseInfo(envelope, visible_response_event_id=visible_response_event_id, failure_reason=reason)
    ctx = CancelledResponseContext(info=info, correlation_id=correlation_id, **bindings.fields())
    await emit(live.registry, EVENT_MESSAGE_CANCELLED, ctx)


class SessionProbe:
    """Tells, after a run, whether it created the conversation's stored session (`session:started`)."""

    def __init__(
        self, entity: Entity, live: LiveState, session_id: str, storage_root: Path, database_url: str | None = None
    ) -> None:
        self.entity = entity
        self.live = live
        self.session_id = session_id
        self.storage_root = storage_root
        self.database_url = database_url
        self._existed: bool | None = None

    async def before(self) -> None:
        """Look whether the session exists yet (skipped when no hook listens)."""
        if not self.live.registry.has_hooks(EVENT_SESSION_STARTED):
            return
        self._existed = await self._exists()

    async def _exists(self) -> bool | None:
        try:
            return await ai.session_exists(
                self.entity.name, self.session_id, storage_root=self.storage_root, database_url=self.database_url
            )
        except Exception as exc:  # a failed probe only means the event is not sent
            logger.warning("session probe failed", agent=self.entity.name, session=self.session_id, error=str(exc))
            return None

    async def after(self, envelope: MessageEnvelope, bindings: HookBindings, correlation_id: str) -> None:
        """Emit `session:started` when the run created the session."""
        if self._existed is not False or await self._exists() is not True:
            return
        ctx = SessionHookContext(
            agent_name=self.entity.name,
            scope=HistoryScope("agent", self.entity.name),
            session_id=self.session_id,
            room_id=envelope.room_id,
            thread_id=envelope.resolved_thread_id,
            correlation_id=correlation_id,
            **bindings.fields(),
        )
        await emit(self.live.registry, EVENT_SESSION_STARTED, ctx)


async def compact_before_answer(
    entity: Entity,
    live: LiveState,
    envelope: MessageEnvelope,
    bindings: HookBindings,
    correlation_id: str,
    model: ModelConfig,
    settings: AgentSettings,
    budget: int | None = None,
    *,
    storage_root: Path,
    env: Mapping[str, str],
    database_url: str | None = None,
) -> bool:
    """Fold the conversation's oldest turns into a summary when its history is over `budget` tokens (None:
    the budget `settings.compaction` gives for an answer by `model`; none: never); True when something was
    folded. The summary is written by `settings.compaction.model`, else by `model`.

    Runs before an answer, and again with a smaller budget when the model refused the turn as too long
    (the request's `shorten_history`). `compaction:before` fires for each chunk before it is stored,
    `compaction:after` once everything is.
    """
    budget = settings.compaction.budget(model) if budget is None else budget
    if budget is None:
        return False
    summarizer = live.config.models.get(settings.compaction.model or "", model)
    registry = live.registry
    session_id = envelope.target.session_id
    base = {
        "agent_name": entity.name,
        "scope": HistoryScope("agent", entity.name),
        "room_id": envelope.room_id,
        "thread_id": envelope.resolved_thread_id,
        "session_id": session_id,
        "correlation_id": correlation_id,
        **bindings.fields(),
    }

    async def before(chunk: ai.CompactionChunk) -> None:
        ctx = CompactionHookContext(messages=chunk.messages, token_count_before=chunk.token_count_before, **base)
        await emit(registry, EVENT_COMPACTION_BEFORE, ctx)

    after = registry.has_hooks(EVENT_COMPACTION_AFTER)
    result = await ai.compact_history(
        entity.name,
        session_id,
        model=summarizer,
        budget=budget,
        num_history_runs=settings.num_history_runs,
        storage_root=storage_root,
        env=env,
        database_url=database_url,
        on_chunk=before if registry.has_hooks(EVENT_COMPACTION_BEFORE) else None,
        with_messages=after,
    )
    if result is None or not after:
        return result is not None
    ctx = CompactionHookContext(
        event_name=EVENT_COMPACTION_AFTER,
        messages=result.messages,
        token_count_before=result.token_count_before,
        token_count_after=result.token_count_after,
        compaction_summary=result.summary,
        **base,
    )
    await emit(registry, EVENT_COMPACTION_AFTER, ctx)
    return True
