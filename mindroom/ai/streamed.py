"""One agent turn streamed: text deltas as the model writes them, the turn persisted once the stream ends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any, cast
from uuid import uuid4

from agno.run.agent import (
    RunCancelledEvent,
    RunCompletedEvent,
    RunContentCompletedEvent,
    RunContentEvent,
    RunErrorEvent,
    ToolCallStartedEvent,
)
from agno.run.base import RunStatus

from mindroom.ai.errors import GenerationError
from mindroom.ai.failures import failure_log
from mindroom.ai.generation import (
    GenerationRequest,
    UsageListener,
    agent_for,
    generation_failed,
    run_images,
    run_metadata,
    strip_failed_run,
)
from mindroom.ai.model_hooks import set_turn_model_hooks
from mindroom.ai.overflow import shorten_history
from mindroom.ai.sessions.store import expecting_new_session
from mindroom.ai.turn_agent import set_run_system_context
from mindroom.ai.turn_options import tool_marker
from mindroom.ai.usage import turn_usage
from mindroom.logging_config import redact_message

__all__ = ["stream_generate"]


async def stream_generate(
    request: GenerationRequest,
    *,
    storage_root: Path,
    env: Mapping[str, str],
    database_url: str | None = None,
    on_usage: UsageListener | None = None,
) -> AsyncGenerator[str, None]:
    """Answer one turn as text deltas; the turn is persisted once the stream ends. Raises `GenerationError`.

    A turn refused as too long before it showed anything is tried once more after its history was folded;
    `on_usage` is told the turn's token usage when the model has finished it.
    """
    shown = False
    for retry in (False, True):
        try:
            async for delta in _turn_events(
                request, storage_root=storage_root, env=env, database_url=database_url, on_usage=on_usage
            ):
                if delta is not None:
                    shown = True
                    yield delta
            return
        except GenerationError as error:
            if retry or shown or error.kind != "context_overflow":
                raise
            if not await shorten_history(request, storage_root, env, database_url):
                raise


async def _turn_events(
    request: GenerationRequest,
    *,
    storage_root: Path,
    env: Mapping[str, str],
    database_url: str | None,
    on_usage: UsageListener | None = None,
) -> AsyncGenerator[str | None, None]:
    """Text deltas, then None when agno marks the content complete; ends once the turn is stored.

    Raises `GenerationError` when the model fails.
    """
    agent, db = agent_for(request, storage_root, env, database_url)
    # Set, not reset: this generator is driven by a task of its own (the stream reader, or the early-answer
    # driver), whose context ends with it; a reset could run in another context when the generator is closed.
    set_run_system_context(request.system_context)
    set_turn_model_hooks(request.agent_name)
    run_id = str(uuid4())
    failure_log.watch(run_id)
    failed = completed = False
    error = failure = None
    calls = 0
    try:
        events = cast(
            "AsyncGenerator[Any, None]",
            agent.arun(
                redact_message(request.user_message),
                stream=True,
                stream_events=True,
                session_id=request.session_id,
                run_id=run_id,
                metadata=run_metadata(request),
                images=run_images(request),
            ),
        )
        async with contextlib.aclosing(events):
            with expecting_new_session(db, request.session_id, request.opens_session):
                async for event in events:
                    if isinstance(event, RunErrorEvent | RunCancelledEvent):
                        failed = True
                    elif isinstance(event, RunContentEvent) and isinstance(event.content, str) and event.content:
                        yield event.content
                    elif request.options.show_tool_calls and isinstance(event, ToolCallStartedEvent) and event.tool:
                        calls += 1
                        yield tool_marker(event.tool.tool_name or "tool", calls)
                    elif isinstance(event, RunContentCompletedEvent) and not failed:
                        yield None
                    elif isinstance(event, RunCompletedEvent) and on_usage is not None:
                        on_usage(turn_usage(event.metrics, request.model.provider))
        completed = not failed
    except Exception as caught:
        failed, error = True, caught
    finally:
        failure = failure_log.pop(run_id)
        if not completed:
            # Finished runs were stripped by the post-hook; failed or abandoned ones are stripped in storage.
            await strip_failed_run(db, run_id, request)
    if failed:
        raise generation_failed(request, failure or error, RunStatus.error.value) from (failure or error)
