"""One message through the pipeline, in order. This module owns the order in which hooks fire:

ingress -> message:received -> commands -> routing -> message:enrich -> generate
-> message:before_response -> send -> message:after_response
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from mindroom.ai import (
    GenerationError,
    GenerationRequest,
    ModelConfigError,
    choose_agent,
    generate_early,
    stream_generate,
)
from mindroom.bots.authorization import is_authorized
from mindroom.bots.commands import handle_command, is_command
from mindroom.bots.fairness import QueueFullError
from mindroom.bots.ingress import IngressDrop, classify_message
from mindroom.bots.routing import decide_route, mentioned_agents
from mindroom.hooks.context import (
    AfterResponseContext,
    BeforeResponseContext,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ResponseDraft,
    ResponseResult,
    new_correlation_id,
)
from mindroom.hooks.enrichment import append_enrichment
from mindroom.hooks.execution import emit, emit_collect, emit_transform
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.types import (
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
)
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixConnectionError, MatrixEvent
from mindroom.tool_system.calls import tool_trace
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context

if TYPE_CHECKING:
    from mindroom.bots.bot import EntityBot

__all__ = ["answer_txn_id", "handle_message_event", "recover_interrupted", "respond"]

logger = get_logger(__name__)

CLOCK_SKEW_MS = 2000
ASSIGNMENT_TIMEOUT_S = 120.0
ORDERED_ANSWER_TIMEOUT_S = 600.0
STREAM_CURSOR = " ⋯"
SEND_RETRY_WINDOW_S = 600.0
INTERRUPTED_TEXT = "(This answer was interrupted when the service restarted. Please ask again.)"


async def handle_message_event(bot: EntityBot, event: MatrixEvent, *, replay: bool = False) -> None:
    """Run one message event through this entity's pipeline.

    `replay` re-runs a turn that a crash cut short: it is already claimed, and older than this run.
    """
    runtime = bot.runtime
    if not replay and event.origin_server_ts < runtime.started_at_ms - CLOCK_SKEW_MS:
        return
    registry = runtime.registry  # the whole turn runs on the registry it started with
    config = runtime.config
    content = event.content
    mentioned = mentioned_agents(content, runtime.agent_user_ids, runtime.display_names)
    accepted = classify_message(
        entity=bot.name,
        event_id=event.event_id,
        room_id=event.room_id,
        sender=event.sender,
        content=content,
        thread_root=event.thread_root,
        is_edit=event.relation_type == "m.replace",
        bot_user_ids=runtime.bot_user_ids,
        mentioned=mentioned,
    )
    if isinstance(accepted, IngressDrop):
        return
    envelope = accepted.envelope
    if not replay and not runtime.state.claim(bot.name, event.event_id, dataclasses.asdict(event)):
        return
    try:
        if not is_authorized(
            config, envelope.requester_id, runtime.room_keys(event.room_id), bot_user_ids=runtime.bot_user_ids.values()
        ):
            if bot.is_router or not runtime.router_in_room(event.room_id):
                logger.info(
                    "message from unauthorized user dropped", room_id=event.room_id, sender=envelope.requester_id
                )
            return
        correlation_id = new_correlation_id()
        with structlog.contextvars.bound_contextvars(
            agent=bot.name, room_id=event.room_id, correlation_id=correlation_id
        ):
            await _pipeline(bot, registry, envelope, accepted.hook_origin_event, correlation_id)
    except asyncio.CancelledError:
        # Cut short (shutdown past its grace): left pending, so the next start finishes the turn.
        raise
    except BaseException:
        runtime.state.complete(bot.name, event.event_id)
        raise
    else:
        runtime.state.complete(bot.name, event.event_id)


async def recover_interrupted(bot: EntityBot) -> None:
    """After a crash: mark streamed answers that never finished, then finish turns that never completed."""
    runtime = bot.runtime
    interrupted: set[str] = set()
    for answer in runtime.state.open_answers(bot.name):
        interrupted.add(answer.source_event_id)
        with contextlib.suppress(Exception):
            event_id = answer.response_event_id
            if event_id is None:
                # Same transaction id as the cut-short send: the homeserver hands back that message if it exists.
                event_id = await bot.client.send_message(
                    answer.room_id,
                    INTERRUPTED_TEXT,
                    thread_root=answer.thread_root,
                    reply_to=answer.source_event_id,
                    txn_id=answer.txn_id,
                )
            await bot.client.edit_message(answer.room_id, event_id, INTERRUPTED_TEXT, thread_root=answer.thread_root)
            logger.info("interrupted answer marked", bot=bot.name, response_event_id=event_id)
        runtime.state.drop_answer(answer.txn_id)
    for pending in runtime.state.pending(bot.name):
        if pending.event_id in interrupted:
            runtime.state.complete(bot.name, pending.event_id)
            continue
        logger.info("finishing a turn cut short by a restart", bot=bot.name, event_id=pending.event_id)
        bot.spawn(handle_message_event(bot, MatrixEvent(**pending.event), replay=True), "replay")


async def _pipeline(
    bot: EntityBot, registry: HookRegistry, envelope: MessageEnvelope, origin_event: str | None, correlation_id: str
) -> None:
    runtime = bot.runtime
    event_id = envelope.source_event_id
    received_registry = registry
    if envelope.message_received_depth == 1 and origin_event == EVENT_MESSAGE_RECEIVED and envelope.hook_source:
        received_registry = registry.without_plugin(envelope.hook_source.split(":", 1)[0])
    received = MessageReceivedContext(envelope=envelope, correlation_id=correlation_id, **bot.hook_bindings())
    await emit(received_registry, EVENT_MESSAGE_RECEIVED, received)
    if received.suppress:
        logger.debug("message suppressed by a hook", event_id=event_id)
        _release(bot, event_id)
        return
    if is_command(envelope.body):
        if bot.is_router or not runtime.router_in_room(envelope.room_id):
            await handle_command(bot, envelope)
        _release(bot, event_id)
        return
    decision = decide_route(envelope.mentioned_agents, runtime.agents_in_room(envelope.room_id))
    if bot.is_router:
        if decision is not None and decision.kind == "router":
            runtime.coordinator.assign(event_id, await _route_by_model(bot, envelope, decision.agents))
        return
    if decision is None or bot.name not in decision.agents:
        return
    try:
        if decision.kind == "router":
            if runtime.router_in_room(envelope.room_id):
                chosen = await runtime.coordinator.assignment(event_id, ASSIGNMENT_TIMEOUT_S)
            else:
                chosen = decision.agents[0]
            if chosen != bot.name:
                return
        elif decision.kind == "mentioned":
            earlier = decision.agents[: decision.agents.index(bot.name)]
            if earlier:
                await runtime.coordinator.wait_for(event_id, earlier, ORDERED_ANSWER_TIMEOUT_S)
        await respond(bot, registry, envelope, correlation_id)
    finally:
        runtime.coordinator.finish(event_id, bot.name)


def _release(bot: EntityBot, event_id: str) -> None:
    if bot.is_router:
        bot.runtime.coordinator.assign(event_id, None)


async def _route_by_model(bot: EntityBot, envelope: MessageEnvelope, candidates: tuple[str, ...]) -> str:
    runtime = bot.runtime
    config = runtime.config
    roles = [(name, config.agents[name].role or config.agents[name].display_name) for name in candidates]
    model = config.models.get(config.router.model)
    chosen = None
    if model is not None:
        try:
            chosen = await choose_agent(model, roles, envelope.body, env=runtime.env)
        except Exception as exc:  # the router must always produce a decision
            logger.warning("router model failed; using the first agent", error=f"{type(exc).__name__}: {exc}")
    if chosen not in candidates:
        chosen = candidates[0]
    logger.info("router chose agent", chosen=chosen, candidates=list(candidates))
    return chosen


async def respond(bot: EntityBot, registry: HookRegistry, envelope: MessageEnvelope, correlation_id: str) -> None:
    """Enrich, generate, transform, send and report one answer of `bot` to `envelope`."""
    try:
        await _respond(bot, registry, envelope, correlation_id)
    except QueueFullError:
        logger.warning("room has too many waiting messages; message dropped", event_id=envelope.source_event_id)


async def _respond(bot: EntityBot, registry: HookRegistry, envelope: MessageEnvelope, correlation_id: str) -> None:
    runtime = bot.runtime
    config = runtime.config
    agent = config.agents.get(bot.name)
    if agent is None:  # removed by a reload while this turn waited
        return
    bindings = bot.hook_bindings()
    # The exit stack closes first: a turn stored after its reply still finishes before the thread's next turn.
    async with (
        bot.turn_slot(envelope.room_id, envelope.resolved_thread_id or envelope.source_event_id),
        contextlib.AsyncExitStack() as after_reply,
    ):
        started = time.perf_counter()
        enrich = MessageEnrichContext(
            envelope=envelope, target_entity_name=bot.name, correlation_id=correlation_id, **bindings
        )
        items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, enrich)
        model = config.models.get(agent.model)
        if model is None:
            await _send_error(bot, envelope, f"No model named {agent.model!r} is configured.")
            return
        request = GenerationRequest(
            agent_name=bot.name,
            display_name=agent.display_name,
            role=agent.role,
            instructions=(*agent.instructions, *runtime.tools.skills.instructions(agent.skills)),
            model=model,
            user_message=append_enrichment(envelope.body, items),
            session_id=f"{envelope.room_id}:{envelope.resolved_thread_id}",
            num_history_runs=agent.num_history_runs
            if agent.num_history_runs is not None
            else config.defaults.num_history_runs,
            markdown=agent.markdown if agent.markdown is not None else config.defaults.markdown,
            tools=bot.tools(registry, envelope),
            user_id=envelope.requester_id,
        )
        streaming = agent.enable_streaming if agent.enable_streaming is not None else config.defaults.enable_streaming
        stream_event_id: str | None = None
        tool_context = ToolRuntimeContext(
            registry=registry,
            agent_name=bot.name,
            room_id=envelope.room_id,
            thread_id=envelope.resolved_thread_id,
            requester_id=envelope.requester_id,
            session_id=request.session_id,
            correlation_id=correlation_id,
            **bindings,
        )
        try:
            with bind_runtime_context(tool_context):
                if streaming:
                    text, stream_event_id = await _stream_to_matrix(bot, envelope, request)
                else:
                    answer = await generate_early(
                        request, storage_root=runtime.runtime_paths.storage_root, env=runtime.env
                    )
                    after_reply.push_async_callback(answer.stored)
                    text = answer.text
        except (GenerationError, ModelConfigError) as exc:
            await _send_error(bot, envelope, str(exc), edit_event_id=stream_event_id)
            return
        trace = tool_trace(tool_context.calls)
        draft = ResponseDraft(text, "ai", trace, None, envelope)
        before = BeforeResponseContext(envelope=envelope, draft=draft, correlation_id=correlation_id, **bindings)
        draft = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, before)
        if draft.suppress:
            if stream_event_id is not None:
                await bot.client.redact(envelope.room_id, stream_event_id, reason="response suppressed")
                runtime.state.end_answer(stream_event_id)
            logger.info("response suppressed by a hook", event_id=envelope.source_event_id)
            return
        response_text = draft.response_text if draft.response_text.strip() else "(empty response)"
        if stream_event_id is not None:
            await _edit(bot, envelope, stream_event_id, response_text, draft.extra_content)
            runtime.state.end_answer(stream_event_id)
            response_event_id, delivery_kind = stream_event_id, "edited"
        else:
            response_event_id = await _send_reply(bot, envelope, response_text, draft.extra_content)
            delivery_kind = "sent"
        bot.metrics.record_answer(time.perf_counter() - started)
        logger.info(
            "answered", event_id=envelope.source_event_id, response_event_id=response_event_id, delivery=delivery_kind
        )
        result_obj = ResponseResult(response_text, response_event_id, delivery_kind, draft.response_kind, envelope)
        after = AfterResponseContext(envelope=envelope, result=result_obj, correlation_id=correlation_id, **bindings)
        await emit(registry, EVENT_MESSAGE_AFTER_RESPONSE, after)


def answer_txn_id(entity: str, source_event_id: str, kind: str) -> str:
    """The transaction id of an entity's `kind` send for one message: the same after a restart.

    A turn that is replayed after a crash sends with the same id, so the homeserver returns the
    message it already has instead of posting a second one.
    """
    digest = hashlib.sha256(f"{entity}\0{source_event_id}\0{kind}".encode()).hexdigest()
    return f"mr{digest[:40]}"


async def _through_outage(send: Callable[[str], Awaitable[str]], what: str, txn_id: str | None = None) -> str:
    """Run a Matrix send until the homeserver takes it, waiting out outages (same transaction id each try)."""
    txn_id = txn_id or uuid.uuid4().hex
    delay = 0.5
    deadline = time.monotonic() + SEND_RETRY_WINDOW_S
    while True:
        try:
            return await send(txn_id)
        except MatrixConnectionError:
            if time.monotonic() + delay > deadline:
                raise
            logger.debug("homeserver unreachable; will retry", what=what, retry_in_s=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


async def _send_reply(
    bot: EntityBot, envelope: MessageEnvelope, text: str, extra: dict[str, Any] | None, kind: str = "reply"
) -> str:
    return await _through_outage(
        lambda txn_id: bot.client.send_message(
            envelope.room_id,
            text,
            thread_root=envelope.resolved_thread_id,
            reply_to=envelope.source_event_id,
            extra_content=extra,
            txn_id=txn_id,
        ),
        kind,
        answer_txn_id(bot.name, envelope.source_event_id, kind),
    )


async def _edit(
    bot: EntityBot, envelope: MessageEnvelope, event_id: str, text: str, extra: dict[str, Any] | None = None
) -> str:
    return await _through_outage(
        lambda txn_id: bot.client.edit_message(
            envelope.room_id,
            event_id,
            text,
            thread_root=envelope.resolved_thread_id,
            extra_content=extra,
            txn_id=txn_id,
        ),
        "edit",
    )


async def _send_error(
    bot: EntityBot, envelope: MessageEnvelope, message: str, *, edit_event_id: str | None = None
) -> None:
    text = f"⚠️ {message}"
    logger.warning("answered with an error", event_id=envelope.source_event_id, problem=message)
    if edit_event_id is not None:
        await _edit(bot, envelope, edit_event_id, text)
        bot.runtime.state.end_answer(edit_event_id)
    else:
        await _send_reply(bot, envelope, text, None, kind="error")


async def _stream_to_matrix(
    bot: EntityBot, envelope: MessageEnvelope, request: GenerationRequest
) -> tuple[str, str | None]:
    """Stream the answer into one message, edited as text arrives; returns (full text, message id).

    The model stream is read by a task of its own, so a stop (a 🛑 reaction, or shutdown at the end of
    its grace) ends the answer at once even while the model is silent: the reader is cancelled, which
    closes the model request, and the text so far is kept with a note saying why it ends there.
    """
    runtime = bot.runtime
    interval = runtime.config.defaults.streaming_edit_interval_ms / 1000.0
    text = ""
    event_id: str | None = None
    shown = ""
    last_edit = 0.0
    deltas: asyncio.Queue[str | None] = asyncio.Queue()
    stream = stream_generate(request, storage_root=runtime.runtime_paths.storage_root, env=runtime.env)

    async def read() -> None:
        try:
            async for delta in stream:
                deltas.put_nowait(delta)
        finally:
            deltas.put_nowait(None)

    with bot.track_stream() as stream_state:
        reader = asyncio.create_task(read(), name=f"stream-{bot.name}")
        stopped = asyncio.create_task(stream_state.stopped.wait(), name=f"stream-stop-{bot.name}")
        waiting: asyncio.Future[str | None] | None = None
        try:
            while True:
                waiting = asyncio.ensure_future(deltas.get())
                await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():
                    break
                delta = waiting.result()
                if delta is None:
                    await reader  # raises the generation error, if the stream ended with one
                    break
                text += delta
                now = time.monotonic()
                if event_id is None:
                    # Recorded before sending, so a crash mid-send still leaves the answer to be marked.
                    txn_id = answer_txn_id(bot.name, envelope.source_event_id, "stream")
                    runtime.state.begin_answer(
                        bot.name, envelope.room_id, txn_id, envelope.source_event_id, envelope.resolved_thread_id
                    )
                    event_id = await _send_reply(bot, envelope, text + STREAM_CURSOR, None, kind="stream")
                    runtime.state.answer_sent(txn_id, event_id)
                    stream_state.event_id = event_id
                    shown, last_edit = text, now
                elif now - last_edit >= interval and text != shown:
                    await bot.client.edit_message(
                        envelope.room_id, event_id, text + STREAM_CURSOR, thread_root=envelope.resolved_thread_id
                    )
                    shown, last_edit = text, now
                if stream_state.stop_requested:
                    break
        finally:
            pending = [task for task in (reader, stopped, waiting) if task is not None and not task.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if stream_state.stop_requested:
            logger.info("stream stopped", event_id=envelope.source_event_id, note=stream_state.stop_note)
            text = f"{text}\n\n{stream_state.stop_note}" if text else stream_state.stop_note
    return text, event_id
