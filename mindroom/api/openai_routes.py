"""`/v1`: `GET /v1/models` and `POST /v1/chat/completions` (a JSON answer, or Server-Sent Events).

Errors come in OpenAI's shape (`OpenAIError`). A stream whose client goes away cancels its turn: the
model request is closed and nothing of the turn is stored; a turn that already answered finishes storing.
"""

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from mindroom.api.app_context import ApiContext
from mindroom.api.completions import TEAM_PREFIX, Completion, eligible_agents, eligible_teams, start_completion
from mindroom.api.openai_protocol import (
    ChatCompletionRequest,
    OpenAIError,
    completion_body,
    new_completion_id,
    parse_request,
    sse_chunk,
)
from mindroom.api.security import v1_principal
from mindroom.logging_config import get_logger, redact_text

__all__ = ["EventStream", "v1_router"]

logger = get_logger(__name__)

_AGENT_FAILED = "Agent execution failed"
_EMPTY = "Agent returned empty response"


class EventStream(StreamingResponse):
    """Server-Sent Events that notice a client going away at once, even while nothing is being sent;
    `on_close` runs however the response ends (even one cut off before its first event)."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def stream() -> None:
                    with contextlib.suppress(OSError):  # the client is gone
                        await self.stream_response(send)
                    group.cancel_scope.cancel()

                group.start_soon(stream)
                await self.listen_for_disconnect(receive)
                group.cancel_scope.cancel()
        finally:
            self.on_close()


def _models(ctx: ApiContext) -> dict[str, Any]:
    running = ctx.daemon.running
    data: list[dict[str, Any]] = []
    if running is not None:
        config = running.live.config
        try:
            created = int(ctx.daemon.config_path.stat().st_mtime)
        except OSError:
            created = 0
        agents = eligible_agents(running)
        if agents:
            description = "Automatically routes to the best agent for your message"
            data.append(_model("auto", "Auto", description, created))
        for name in agents:
            agent = config.agents[name]
            data.append(_model(name, agent.display_name, agent.role or None, created))
        for name in eligible_teams(running):
            team = config.teams[name]
            data.append(_model(TEAM_PREFIX + name, team.display_name, team.role or None, created))
    return {"object": "list", "data": data}


def _model(model_id: str, name: str, description: str | None, created: int) -> dict[str, Any]:
    return {
        "id": model_id,
        "object": "model",
        "created": created,
        "owned_by": "mindroom",
        "name": name,
        "description": description,
    }


async def _first_event(completion: Completion, timeout_s: float) -> tuple[str, str]:
    try:
        async with asyncio.timeout(timeout_s):
            return await completion.channel.events.get()
    except TimeoutError:
        completion.task.cancel()
        return ("error", "the answer took too long")


def _failure(kind: str, message: str, completion: Completion) -> OpenAIError:
    logger.warning("completion failed", model=completion.model, problem=redact_text(message))
    if kind == "end" and not completion.channel.delivered:
        message = _EMPTY
    return OpenAIError(500, _EMPTY if message == _EMPTY else _AGENT_FAILED, type_="server_error")


async def _answer_whole(completion: Completion, completion_id: str, timeout_s: float) -> Response:
    kind, message = await _first_event(completion, timeout_s)
    channel = completion.channel
    if kind != "end" or not channel.delivered:
        raise _failure(kind, message, completion)
    usage = channel.usage
    body = completion_body(completion_id, completion.model, channel.text, (usage.input_tokens, usage.output_tokens))
    return JSONResponse(body)


async def _stream(completion: Completion, completion_id: str, first: tuple[str, str]) -> AsyncIterator[str]:
    created = int(time.time())
    model = completion.model
    yield sse_chunk(completion_id, model, created, {"role": "assistant"})
    kind, text = first
    while kind == "delta":
        yield sse_chunk(completion_id, model, created, {"content": text})
        kind, text = await completion.channel.events.get()
    if kind == "error":
        yield sse_chunk(completion_id, model, created, {"content": f"\n\n⚠️ {redact_text(text)}"})
    yield sse_chunk(completion_id, model, created, {}, "stop")
    yield "data: [DONE]\n\n"


def v1_router(ctx: ApiContext) -> APIRouter:
    """The `/v1` routes on `ctx`."""
    router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])

    @router.get("/models", summary="The agents a client may choose (and `auto`)")
    async def list_models(request: Request) -> dict[str, Any]:
        v1_principal(request, ctx.settings)
        return _models(ctx)

    @router.post(
        "/chat/completions",
        summary="A chat completion by an agent, streamed as Server-Sent Events or whole",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ChatCompletionRequest.model_json_schema()}},
            }
        },
    )
    async def chat_completions(request: Request) -> Response:
        principal = v1_principal(request, ctx.settings)
        wait = ctx.v1_limiter.retry_after(principal.rate_key)
        if wait is not None:
            raise OpenAIError(
                429, "Rate limit reached", type_="rate_limit_error", headers={"Retry-After": str(int(wait) + 1)}
            )
        parsed = parse_request(await request.body())
        if ctx.turn_slots.locked():
            raise OpenAIError(429, "Too many completions at once; retry shortly", type_="rate_limit_error")
        await ctx.turn_slots.acquire()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                ctx.turn_slots.release()

        try:
            completion_id = new_completion_id()
            completion = await start_completion(ctx, principal, parsed, request.headers, completion_id)
            timeout_s = ctx.settings.completion_timeout_s
            if not parsed.stream:
                return await _answer_whole(completion, completion_id, timeout_s)
            first = await _first_event(completion, timeout_s)
            if first[0] != "delta":
                raise _failure(*first, completion)
        except BaseException:
            release()
            raise
        finally:
            if not parsed.stream:
                release()

        def close() -> None:
            if not completion.channel.delivered and not completion.task.done():
                completion.task.cancel()  # the client is gone: the turn stops, and nothing of it is stored
                logger.info("completion stream abandoned by its client", model=completion.model)
            release()

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return EventStream(_stream(completion, completion_id, first), close, headers=headers)

    return router
