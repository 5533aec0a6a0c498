"""One agent's answer to one message: enrich -> generate -> before_response -> deliver -> after_response.

Every stage runs on the one `LiveState` the turn took at its start. `Responder` holds what answering
declares: the turn's stores and the paths (data directory, environment) the model layer reads.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from mindroom import ai
from mindroom.ai.errors import GenerationError, ModelConfigError
from mindroom.bots.answer_events import (
    SessionProbe,
    compact_before_answer,
    enrich,
    final_text,
    report_cancelled,
    system_context,
)
from mindroom.bots.answerer import Answerer, ExtraTools, Roster, answerer_for
from mindroom.bots.approvals.desk import ApprovalSeat, answering_approvals
from mindroom.bots.channel import AnswerChannel, GenerationSetup, Turn
from mindroom.bots.edits import EditWatch
from mindroom.bots.fairness import QueueFullError
from mindroom.bots.lifecycle import OpenAnswer, open_answer
from mindroom.bots.matrix_answer import MatrixAnswer
from mindroom.bots.media import images_for_model
from mindroom.bots.outbox import draft_listing, take_files
from mindroom.bots.pipeline_capabilities import TurnStores
from mindroom.bots.reply import ReplyChannel
from mindroom.bots.runtime import INTERRUPTED_NOTE, STOPPED_NOTE, Entity, LiveState
from mindroom.bots.turn_context import turn_context
from mindroom.bots.turn_log import TurnLog, noting_turn
from mindroom.bots.turn_mind import TurnMind
from mindroom.bots.usage.turns import record_turn, turn_model
from mindroom.bots.voice_reply import follow_answer
from mindroom.constants import RuntimePaths
from mindroom.hooks.context import (
    AfterResponseContext,
    BeforeResponseContext,
    HookBindings,
    MessageEnvelope,
    ResponseDraft,
    ResponseResult,
)
from mindroom.hooks.enrichment import EnrichmentItem, append_enrichment
from mindroom.hooks.execution import emit, emit_transform
from mindroom.hooks.transport import DeliveryKind, ResponseUsage
from mindroom.hooks.types import EVENT_MESSAGE_AFTER_RESPONSE, EVENT_MESSAGE_BEFORE_RESPONSE
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError
from mindroom.state.answers import AnswerRecord
from mindroom.tool_system.calls import tool_trace
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import OutboundFile

__all__ = ["Responder", "session_id"]

logger = get_logger(__name__)

_STOP_REASONS = {STOPPED_NOTE: "cancelled_by_user", INTERRUPTED_NOTE: "interrupted"}


@dataclass(frozen=True, slots=True)
class _Turn:
    """What every stage of one answer shares."""

    entity: Entity
    live: LiveState
    envelope: MessageEnvelope
    correlation_id: str
    bindings: HookBindings
    channel: AnswerChannel
    replaces: AnswerRecord | None
    image_ids: tuple[str, ...]
    stores: TurnStores
    paths: RuntimePaths
    mind: TurnMind | None
    edit: EditWatch | None
    answerer: Answerer


@dataclass(frozen=True, slots=True)
class _Generated:
    text: str
    stream_event_id: str | None
    draft: ResponseDraft
    cancelled: str | None = None
    """Why the answer ended early (a stop reaction, shutdown), if it did: reported as `message:cancelled`."""
    files: tuple[OutboundFile, ...] = ()
    usage: ResponseUsage | None = None


@dataclass(frozen=True, slots=True)
class _Ended:
    """An answer that ends without delivery: why (reported as `message:cancelled` when given), and what shows it."""

    reason: str | None
    visible_event_id: str | None = None


def session_id(envelope: MessageEnvelope) -> str:
    """The conversation a message belongs to: its thread, or the room when answers go to the main timeline
    (an API request names its own)."""
    return envelope.target.session_id


@dataclass(frozen=True, slots=True)
class Responder:
    """Answers for the pipeline, with the turn's stores (the journal's open answer, the answers given,
    attachments, approvals), the paths the model layer reads (data directory, environment), and what agents
    remember and know (`mind`; None: nothing)."""

    stores: TurnStores
    paths: RuntimePaths
    log: TurnLog | None = None
    """Where each answer is noted for operators (the dashboard's last turns); None: nowhere."""
    mind: TurnMind | None = None
    """What the agent remembers of people and the knowledge it searches (None: nothing)."""
    roster: Roster | None = None
    """Who is where: a room's names (for `room_models`) and a team's running members (for their tools)."""
    handoffs: ExtraTools | None = None
    """The hand-off tool of agents that may ask another agent of the room (None: none may)."""

    async def respond(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, given: Turn) -> None:
        """Enrich, generate, transform, send and report one answer of `entity` to `envelope`."""
        answerer = answerer_for(
            live, entity.name, envelope.room_id, envelope.resolved_thread_id, self.roster, (self.mind, self.handoffs)
        )
        if answerer is None:
            return
        markdown = answerer.settings.markdown
        fence = self.stores.journal.holds_lock  # nothing goes out once this daemon cannot show it holds the state
        channel = given.channel or MatrixAnswer(
            ReplyChannel(entity, envelope, hops=given.hops, markdown=markdown, fence=fence)
        )
        turn = _Turn(
            entity,
            live,
            envelope,
            given.correlation_id,
            given.bindings,
            channel,
            given.replaces,
            given.image_ids,
            self.stores,
            self.paths,
            self.mind,
            given.edit,
            answerer,
        )
        if given.replaces is not None:
            # The earlier answer may still be streaming: it stops, and this turn then takes the thread's slot.
            entity.request_stop(given.replaces.response_event_id)
        with noting_turn(self.log, given.correlation_id, entity.name, envelope) as note:
            try:
                # The exit stack closes first: a turn stored after its reply still finishes before the next turn.
                async with (
                    entity.turn_slot(envelope.room_id, session_id(envelope)),
                    contextlib.AsyncExitStack() as after_reply,
                ):
                    if given.edit is not None and not await given.edit.settled():  # a newer edit answers instead
                        logger.info("edit superseded by a newer one", event_id=envelope.source_event_id)
                        note.outcome = "superseded"
                        return
                    note.outcome = await _answer(turn, after_reply)
            except QueueFullError:
                note.outcome = "queue_full"
                logger.warning("room has too many waiting messages; message dropped", event_id=envelope.source_event_id)


async def _answer(turn: _Turn, after_reply: contextlib.AsyncExitStack) -> str:
    """The stages of one answer, in its thread's slot; a streamed answer's record lives as long as `answer`.

    Returns how it ended: `answered`, or the reason it was not delivered."""
    entity, live, envelope = turn.entity, turn.live, turn.envelope
    started = time.perf_counter()
    members = turn.answerer.member_names
    items = await enrich(entity, live, envelope, turn.bindings, turn.correlation_id, members)
    system = await system_context(entity, live, envelope, turn.bindings, turn.correlation_id, members)
    # What the agent remembers of the sender joins the run's system prompt, never stored.
    remembered = await turn.mind.recall(live.config, entity.name, envelope.requester_id) if turn.mind else ""
    settings, paths = turn.answerer.settings, turn.paths
    system = await turn_context(live.config, entity.name, settings, paths, envelope.requester_id, system, remembered)
    probe = SessionProbe(entity, live, session_id(envelope), turn.paths.storage_root, turn.stores.session_url)
    await probe.before()
    # Pushed first, so it runs last: after the run is stored (an early answer stores after its reply).
    after_reply.push_async_callback(probe.after, envelope, turn.bindings, turn.correlation_id)
    journal = turn.stores.journal
    thread = envelope.resolved_thread_id
    stopped: str | None = None
    # A streamed answer's record ends on the way out of this block, whichever way the answer went.
    with open_answer(journal, entity.name, envelope.room_id, envelope.source_event_id, thread) as answer:
        async with turn.channel.working():
            generated = await _generate(turn, items, system, after_reply, answer)
        if isinstance(generated, _Ended):
            outcome: ResponseResult | _Ended = generated
        elif turn.edit is not None and turn.edit.superseded():  # the newer edit answers in place instead
            outcome = _Ended("superseded", generated.stream_event_id)
        else:
            outcome = await _final(turn, generated)
            stopped = generated.cancelled
    if isinstance(outcome, _Ended):
        if outcome.reason is not None:
            await _cancelled(turn, outcome.reason, outcome.visible_event_id)
        return outcome.reason or "failed"
    entity.metrics.record_answer(time.perf_counter() - started)
    if stopped is not None:
        await _cancelled(turn, stopped, outcome.response_event_id)
        return stopped
    await _report(turn, outcome)
    if turn.mind is not None:  # after the reply and its hooks, in a task of its own: nothing waits for it
        turn.mind.after_answer(live.config, entity.name, envelope.requester_id, envelope.body, outcome.response_text)
    return "answered"


async def _final(turn: _Turn, generated: _Generated) -> ResponseResult | _Ended:
    """`message:before_response`, then the delivery; or why there is none."""
    transformed = await _transform(turn, generated)
    if isinstance(transformed, _Ended):
        return transformed
    draft, files = take_files(transformed, generated.files)  # the files a hook left listed follow the answer
    try:
        result = await _deliver(turn, generated, draft)
    except MatrixError:
        await _cancelled(turn, "delivery_failed", generated.stream_event_id)
        raise
    if turn.channel.in_room:
        await follow_answer(turn.entity, turn.live, turn.envelope, files, result.response_text, turn.paths.env_values)
    return result


def _opens_conversation(turn: _Turn) -> bool:
    """The message is the root of its own thread: its conversation has no history yet, nothing to compact.

    Saves reading the session's runs on the first message of every thread, the most common turn in Element.
    """
    envelope = turn.envelope
    return turn.replaces is None and envelope.resolved_thread_id == envelope.source_event_id


async def _generate(
    turn: _Turn, items: list[EnrichmentItem], system: str, after_reply: contextlib.AsyncExitStack, answer: OpenAnswer
) -> _Generated | _Ended:
    """Run the model (streamed into Matrix, or whole); `_Ended` when it failed and the error was answered."""
    entity, live, envelope = turn.entity, turn.live, turn.envelope
    config = live.config
    who = turn.answerer
    model_name, model, refusal = turn_model(config, who.model_name, envelope.requester_id, turn.stores.usage)
    if model is None:
        await turn.channel.error(refusal)
        return _Ended(None)
    settings = who.settings
    storage_root, env, database_url = turn.paths.storage_root, turn.paths.env_values, turn.stores.session_url
    question = turn.replaces.source_event_id if turn.replaces is not None else envelope.source_event_id
    if turn.replaces is not None:
        await ai.forget_turn(
            entity.name, session_id(envelope), question, storage_root=storage_root, database_url=database_url
        )

    async def compact(budget: int | None = None) -> bool:
        """Fold the history with the compaction hooks: before the answer, and when the model refuses it as too long."""
        return await compact_before_answer(
            *(entity, live, envelope, turn.bindings, turn.correlation_id, model, settings, budget),
            storage_root=storage_root,
            env=env,
            database_url=database_url,
        )

    if settings.with_history and not _opens_conversation(turn) and who.team is None:
        await compact()
    images, image_notes = await images_for_model(turn.stores.attachments, turn.image_ids, model)
    request = ai.GenerationRequest(
        agent_name=entity.name,
        display_name=who.display_name,
        role=who.role,
        instructions=who.instructions,
        model=model,
        user_message=append_enrichment(envelope.body + image_notes, items),
        session_id=session_id(envelope),
        num_history_runs=settings.num_history_runs,
        markdown=settings.markdown,
        tools=(*entity.tools(live, envelope.requester_id), *who.tools),
        user_id=envelope.requester_id,
        source_event_id=question,
        images=images,
        system_context=system,
        opens_session=_opens_conversation(turn),
        shorten_history=compact if who.team is None else None,
        team=who.team,
        options=who.options,
    )
    tool_context = ToolRuntimeContext(
        registry=live.registry,
        agent_name=entity.name,
        room_id=envelope.room_id,
        thread_id=envelope.resolved_thread_id,
        requester_id=envelope.requester_id,
        session_id=request.session_id,
        correlation_id=turn.correlation_id,
        target=envelope.target,
        message_received_depth=envelope.message_received_depth,
        approval_requester=answering_approvals(
            turn.stores.approvals,
            turn.channel.in_room,
            ApprovalSeat.answering(entity.name, who.display_name, entity.client, envelope, turn.correlation_id),
        ),
        **turn.bindings.tool_runtime_fields(),
    )
    existing = turn.replaces.response_event_id if turn.replaces is not None else None
    streaming = settings.enable_streaming
    setup = GenerationSetup(live, answer, after_reply, streaming, storage_root, env, database_url, existing)
    try:
        with bind_runtime_context(tool_context):
            streamed = await turn.channel.generate(request, setup)
    except (GenerationError, ModelConfigError) as exc:
        # The error takes the place of what the stream showed so far.
        await turn.channel.error(str(exc), edit_event_id=answer.event_id)
        return _Ended(str(exc), answer.event_id)
    files = tuple(tool_context.outbox) if turn.channel.in_room else ()
    draft = ResponseDraft(
        streamed.text, who.response_kind, tool_trace(tool_context.calls), draft_listing(files), envelope
    )
    if streamed.usage is not None:  # spent whether or not the answer is delivered
        entity.metrics.record_usage(streamed.usage)
        ledger, spent, calls = turn.stores.usage, streamed.usage, len(tool_context.calls)
        record_turn(ledger, config, entity.name, envelope, model_name, spent, calls, entity.client, after_reply)
    stop = _STOP_REASONS.get(streamed.stop_note or "")
    return _Generated(streamed.text, streamed.event_id, draft, stop, files, streamed.usage)


async def _transform(turn: _Turn, generated: _Generated) -> ResponseDraft | _Ended:
    """`message:before_response`; `_Ended` when a hook suppressed the answer (a streamed one is removed)."""
    ctx = BeforeResponseContext(
        envelope=turn.envelope,
        draft=generated.draft,
        correlation_id=turn.correlation_id,
        **turn.bindings.fields(),
    )
    draft = await emit_transform(turn.live.registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)
    if not draft.suppress:
        return draft
    if generated.stream_event_id is not None:
        await turn.channel.redact(generated.stream_event_id, "response suppressed")
    logger.info("response suppressed by a hook", event_id=turn.envelope.source_event_id)
    return _Ended("suppressed_by_hook")


async def _deliver(turn: _Turn, generated: _Generated, draft: ResponseDraft) -> ResponseResult:
    """Send the final answer: the last edit of a streamed one, else a new reply."""
    text = draft.response_text if draft.response_text.strip() else "(empty response)"
    delivery: DeliveryKind
    replaced = turn.replaces.response_event_id if turn.replaces is not None else None
    if generated.stream_event_id is not None:
        text = await final_text(turn.live, turn.envelope, turn.bindings, turn.correlation_id, text, draft.response_kind)
        await turn.channel.edit(generated.stream_event_id, text, draft.extra_content)
        event_id, delivery = generated.stream_event_id, "edited"
    elif replaced is not None:
        await turn.channel.edit(replaced, text, draft.extra_content)
        event_id, delivery = replaced, "edited"
    else:
        event_id = await turn.channel.reply(text, draft.extra_content)
        delivery = "sent"
    envelope = turn.envelope
    question = turn.replaces.source_event_id if turn.replaces is not None else envelope.source_event_id
    if turn.channel.in_room:  # what an edited question or a reaction looks up
        turn.stores.answers.record(
            AnswerRecord(
                turn.entity.name,
                question,
                envelope.room_id,
                session_id(envelope),
                envelope.resolved_thread_id,
                envelope.requester_id,
                event_id,
            )
        )
    logger.info("answered", event_id=turn.envelope.source_event_id, response_event_id=event_id, delivery=delivery)
    if envelope.resolved_thread_id is not None and turn.channel.in_room:
        where = (envelope.room_id, envelope.resolved_thread_id)
        turn.stores.summaries.answered(turn.live.config, turn.entity, *where, _opens_conversation(turn))
    return ResponseResult(text, event_id, delivery, draft.response_kind, turn.envelope, generated.usage)


async def _cancelled(turn: _Turn, reason: str, visible_event_id: str | None = None) -> None:
    await report_cancelled(turn.live, turn.envelope, turn.bindings, turn.correlation_id, reason, visible_event_id)


async def _report(turn: _Turn, result: ResponseResult) -> None:
    ctx = AfterResponseContext(
        envelope=turn.envelope,
        result=result,
        correlation_id=turn.correlation_id,
        **turn.bindings.fields(),
    )
    await emit(turn.live.registry, EVENT_MESSAGE_AFTER_RESPONSE, ctx)
