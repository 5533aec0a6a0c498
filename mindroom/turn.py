"""One message through the pipeline, in order. This module owns the order in which hooks fire:

ingress -> message:received -> commands -> routing -> message:enrich -> generate
-> message:before_response -> send -> message:after_response
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import structlog

from mindroom.ai import GenerationError, GenerationRequest, ModelConfigError, choose_agent, generate, stream_generate
from mindroom.authorization import is_authorized
from mindroom.commands import handle_command, is_command
from mindroom.hooks.context import (
    AfterResponseContext,
    BeforeResponseContext,
    MessageEnrichContext,
    MessageEnvelope,
    MessageReceivedContext,
    ResponseDraft,
    ResponseResult,
    ToolTraceEntry,
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
from mindroom.ingress import IngressDrop, classify_message
from mindroom.logging_config import get_logger
from mindroom.routing import decide_route, mentioned_agents

if TYPE_CHECKING:
    from mindroom.bot import EntityBot
    from mindroom.matrix import MatrixEvent

__all__ = ["handle_message_event", "respond"]

logger = get_logger(__name__)

CLOCK_SKEW_MS = 2000
ASSIGNMENT_TIMEOUT_S = 120.0
ORDERED_ANSWER_TIMEOUT_S = 600.0
STREAM_CURSOR = " ⋯"


async def handle_message_event(bot: EntityBot, event: MatrixEvent) -> None:
    """Run one message event through this entity's pipeline."""
    runtime = bot.runtime
    if event.origin_server_ts < runtime.started_at_ms - CLOCK_SKEW_MS:
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
    if not runtime.handled.claim(bot.name, event.event_id):
        return
    if not is_authorized(
        config, envelope.requester_id, runtime.room_keys(event.room_id), bot_user_ids=runtime.bot_user_ids.values()
    ):
        if bot.is_router or not runtime.router_in_room(event.room_id):
            logger.info("message from unauthorized user dropped", room_id=event.room_id, sender=envelope.requester_id)
        return
    correlation_id = new_correlation_id()
    with structlog.contextvars.bound_contextvars(agent=bot.name, room_id=event.room_id, correlation_id=correlation_id):
        await _pipeline(bot, registry, envelope, accepted.hook_origin_event, correlation_id)


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
    runtime = bot.runtime
    config = runtime.config
    agent = config.agents[bot.name]
    bindings = bot.hook_bindings()
    async with bot.turn_slot(envelope.resolved_thread_id or envelope.source_event_id):
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
            instructions=tuple(agent.instructions),
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
        trace: list[ToolTraceEntry] | None = None
        try:
            if streaming:
                text, stream_event_id = await _stream_to_matrix(bot, envelope, request)
            else:
                result = await generate(request, storage_root=runtime.runtime_paths.storage_root, env=runtime.env)
                text = result.text
                trace = [
                    ToolTraceEntry(
                        tool_name=t.name,
                        args_preview=str(dict(t.arguments))[:200],
                        result_preview=None if t.result is None else t.result[:200],
                    )
                    for t in result.tool_trace
                ] or None
        except (GenerationError, ModelConfigError) as exc:
            await _send_error(bot, envelope, str(exc), edit_event_id=stream_event_id)
            return
        draft = ResponseDraft(text, "ai", trace, None, envelope)
        before = BeforeResponseContext(envelope=envelope, draft=draft, correlation_id=correlation_id, **bindings)
        draft = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, before)
        if draft.suppress:
            if stream_event_id is not None:
                await bot.client.redact(envelope.room_id, stream_event_id, reason="response suppressed")
            logger.info("response suppressed by a hook", event_id=envelope.source_event_id)
            return
        response_text = draft.response_text if draft.response_text.strip() else "(empty response)"
        if stream_event_id is not None:
            await bot.client.edit_message(
                envelope.room_id,
                stream_event_id,
                response_text,
                thread_root=envelope.resolved_thread_id,
                extra_content=draft.extra_content,
            )
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


async def _send_reply(bot: EntityBot, envelope: MessageEnvelope, text: str, extra: dict[str, Any] | None) -> str:
    return await bot.client.send_message(
        envelope.room_id,
        text,
        thread_root=envelope.resolved_thread_id,
        reply_to=envelope.source_event_id,
        extra_content=extra,
    )


async def _send_error(
    bot: EntityBot, envelope: MessageEnvelope, message: str, *, edit_event_id: str | None = None
) -> None:
    text = f"⚠️ {message}"
    logger.warning("answered with an error", event_id=envelope.source_event_id, problem=message)
    if edit_event_id is not None:
        await bot.client.edit_message(envelope.room_id, edit_event_id, text, thread_root=envelope.resolved_thread_id)
    else:
        await _send_reply(bot, envelope, text, None)


async def _stream_to_matrix(
    bot: EntityBot, envelope: MessageEnvelope, request: GenerationRequest
) -> tuple[str, str | None]:
    """Stream the answer into one message, edited as text arrives; returns (full text, message id)."""
    runtime = bot.runtime
    interval = runtime.config.defaults.streaming_edit_interval_ms / 1000.0
    text = ""
    event_id: str | None = None
    shown = ""
    last_edit = 0.0
    stream = stream_generate(request, storage_root=runtime.runtime_paths.storage_root, env=runtime.env)
    with bot.track_stream() as stream_state:
        async for delta in stream:
            text += delta
            now = time.monotonic()
            if event_id is None:
                event_id = await _send_reply(bot, envelope, text + STREAM_CURSOR, None)
                stream_state.event_id = event_id
                shown, last_edit = text, now
            elif now - last_edit >= interval and text != shown:
                await bot.client.edit_message(
                    envelope.room_id, event_id, text + STREAM_CURSOR, thread_root=envelope.resolved_thread_id
                )
                shown, last_edit = text, now
            if stream_state.stop_requested:
                text += "\n\n(stopped)"
                break
            await asyncio.sleep(0)
    return text, event_id
