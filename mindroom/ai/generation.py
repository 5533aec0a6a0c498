"""One agent turn through agno: prior turns of the thread in, the answer out, the new turn persisted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from agno.agent import Agent
from agno.db.base import AsyncBaseDb
from agno.media import Image
from agno.run.agent import (
    RunOutput,
)
from agno.run.base import RunStatus
from agno.run.team import TeamRunOutput
from agno.team import Team

from mindroom.ai.agents import agent_cache
from mindroom.ai.errors import GenerationError, ModelConfigError
from mindroom.ai.failures import failure_log, generation_error
from mindroom.ai.media import ImageInput
from mindroom.ai.model_hooks import model_hooks_for_turn
from mindroom.ai.models import model_env_fingerprint
from mindroom.ai.overflow import HistoryShortener, shorten_history
from mindroom.ai.sessions.history import RUN_EVENT_KEY, session_db, strip_run_enrichment, strip_run_output_enrichment
from mindroom.ai.sessions.store import expecting_new_session
from mindroom.ai.teams.plan import TeamPlan
from mindroom.ai.teams.team import build_team, team_fingerprint
from mindroom.ai.turn_agent import TurnAgent, run_system_context
from mindroom.ai.turn_options import TurnOptions, history_options, tool_markers
from mindroom.ai.usage import TokenUsage, turn_usage
from mindroom.config.main import ModelConfig
from mindroom.logging_config import get_logger, redact_message

__all__ = [
    "EarlyAnswer",
    "GenerationRequest",
    "GenerationResult",
    "UsageListener",
    "agent_for",
    "generate",
    "generate_early",
    "generation_failed",
    "run_images",
    "run_metadata",
    "strip_failed_run",
]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """Everything one agent turn needs: who answers, with which model, in which thread, to what."""

    agent_name: str
    display_name: str
    role: str
    instructions: tuple[str, ...]
    model: ModelConfig
    user_message: str
    """What the model answers; it gets it (and the session keeps it) with pasted secrets redacted (`redact_message`)."""
    session_id: str
    num_history_runs: int
    markdown: bool
    tools: tuple[Any, ...] = ()
    user_id: str | None = None
    source_event_id: str | None = None
    """The Matrix message this turn answers; stored with the run, so an edit of it can replace the run."""
    images: tuple[ImageInput, ...] = ()
    system_context: str = ""
    """Added to this run's system prompt only (the `system:enrich` block); never stored."""
    opens_session: bool = False
    """The message starts its thread, so the session is new: it is not read before the run."""
    shorten_history: HistoryShortener | None = None
    """Folds the conversation's history to at most the given tokens (True when it folded something), when
    the model refuses the turn as too long; unset: generation folds it itself (see `mindroom.ai.overflow`)."""
    team: TeamPlan | None = None
    """Set for a team's turn: `model` is the leader's, and these members answer with it (`mindroom.ai.teams.team`)."""
    options: TurnOptions = field(default_factory=TurnOptions)


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """The model's answer to a turn (its tool calls are recorded by `call_tool` in the bound `ToolRuntimeContext`)
    and the tokens the turn cost."""

    text: str
    model_id: str
    usage: TokenUsage = field(default_factory=TokenUsage)


UsageListener = Callable[[TokenUsage], None]
"""Told a streamed turn's token usage once the model has finished it."""


def _fingerprint(request: GenerationRequest, env: Mapping[str, str]) -> tuple[Any, ...]:
    return (
        request.model.model_dump_json(),
        model_env_fingerprint(request.model, env),
        request.display_name,
        request.role,
        request.instructions,
        request.num_history_runs,
        request.markdown,
        request.options,
        tuple(id(tool) for tool in request.tools),
        team_fingerprint(request.team, env) if request.team is not None else None,
    )


_EARLY_CONTENT: ContextVar[Callable[[RunOutput], None] | None] = ContextVar("mindroom_early_content", default=None)
"""Set by `generate_early` in the task that runs the turn: who gets the text before the turn is stored."""


def _announce_content(run_output: RunOutput) -> None:
    """agno post-hook (after the model's last word, before the store): pass the finished run to `generate_early`."""
    announce = _EARLY_CONTENT.get()
    if announce is not None:
        announce(run_output)


def _finish_run(run_output: RunOutput) -> None:
    """The agent's one agno post-hook (agno reads each hook's signature on every run): strip the enrichment
    from what is stored, then announce the finished run."""
    strip_run_output_enrichment(run_output)
    _announce_content(run_output)


def _build_agent(request: GenerationRequest, db: AsyncBaseDb, env: Mapping[str, str]) -> Agent:
    return TurnAgent(
        id=request.agent_name,
        name=request.display_name,
        model=agent_cache.model(request.model, env),
        db=db,
        description=request.role or None,
        instructions=list(request.instructions) or None,
        markdown=request.markdown,
        add_name_to_context=True,
        **history_options(request.num_history_runs, request.options),
        tools=list(request.tools) or None,
        post_hooks=[_finish_run],
        telemetry=False,
    )


def agent_for(
    request: GenerationRequest, storage_root: Path, env: Mapping[str, str], database_url: str | None = None
) -> tuple[Agent | Team, AsyncBaseDb]:
    """The (cached) agent or team for `request`, and its session store; `GenerationError` for a bad model."""
    try:
        db = session_db(storage_root, request.agent_name, database_url)
        team = request.team is not None
        agent = agent_cache.agent(
            ("team" if team else "agent", str(storage_root), database_url, request.agent_name),
            _fingerprint(request, env),
            (lambda: build_team(request, db, env, _announce_content))
            if team
            else (lambda: _build_agent(request, db, env)),
        )
    except ModelConfigError as error:
        logger.error("model misconfigured", agent=request.agent_name, problem=error.problem)
        raise GenerationError("The model is not set up correctly.", kind="misconfigured") from error
    return agent, db


def run_images(request: GenerationRequest) -> list[Image] | None:
    """The request's images as agno takes them (None: none)."""
    return [Image(content=image.data, mime_type=image.mimetype) for image in request.images] or None


def run_metadata(request: GenerationRequest) -> dict[str, Any] | None:
    """What is stored with the run: who asked, and the Matrix message it answers."""
    metadata = {"sender": request.user_id, RUN_EVENT_KEY: request.source_event_id}
    return {key: value for key, value in metadata.items() if value} or None


async def strip_failed_run(db: AsyncBaseDb, run_id: str, request: GenerationRequest) -> None:
    """Take the run's enrichment out of storage (a failure is logged: the answer, if any, stands)."""
    try:
        await strip_run_enrichment(db, run_id)
    except Exception as error:
        # The answer exists already; a failed cleanup must not take it away from the user.
        logger.warning(
            "stripping enrichment from a run failed",
            agent=request.agent_name,
            session=request.session_id,
            error=str(error),
        )


def generation_failed(request: GenerationRequest, error: BaseException | None, status: str | None) -> GenerationError:
    """The `GenerationError` for a failed run (logged with the agent and model)."""
    failure = generation_error(error)
    logger.warning(
        "generation failed",
        agent=request.agent_name,
        model=request.model.id,
        kind=failure.kind,
        status_code=failure.status_code,
        run_status=status,
        error=None if error is None else str(error),
    )
    return failure


async def generate(
    request: GenerationRequest, *, storage_root: Path, env: Mapping[str, str], database_url: str | None = None
) -> GenerationResult:
    """Answer one turn (non-streaming); raises `GenerationError` when the model fails.

    The session is stored under `storage_root`, or in the PostgreSQL database at `database_url` (the state's).
    A turn refused as too long for the model is tried once more after its history was folded.
    """
    try:
        return await _generate_once(request, storage_root, env, database_url)
    except GenerationError as error:
        if error.kind != "context_overflow" or not await shorten_history(request, storage_root, env, database_url):
            raise
    return await _generate_once(request, storage_root, env, database_url)


async def _generate_once(
    request: GenerationRequest, storage_root: Path, env: Mapping[str, str], database_url: str | None
) -> GenerationResult:
    agent, db = agent_for(request, storage_root, env, database_url)
    run_id = str(uuid4())
    failure_log.watch(run_id)
    output: RunOutput | TeamRunOutput | None = None
    error: BaseException | None = None
    try:
        with (
            run_system_context(request.system_context),
            model_hooks_for_turn(request.agent_name),
            expecting_new_session(db, request.session_id, request.opens_session),
        ):
            output = await agent.arun(
                redact_message(request.user_message),
                stream=False,
                session_id=request.session_id,
                run_id=run_id,
                metadata=run_metadata(request),
                images=run_images(request),
            )
    except Exception as caught:
        error = caught
    finally:
        failure = failure_log.pop(run_id)
    if output is None or output.status != RunStatus.completed:
        await strip_failed_run(db, run_id, request)
        status = output.status.value if output is not None and output.status is not None else None
        raise generation_failed(request, failure or error, status) from (failure or error)
    usage = turn_usage(output.metrics, request.model.provider)
    text = _text_of(output)
    if request.options.show_tool_calls and output.tools:
        text = tool_markers(tool.tool_name or "tool" for tool in output.tools) + text
    return GenerationResult(text=text, model_id=output.model or request.model.id, usage=usage)


def _text_of(output: RunOutput | TeamRunOutput) -> str:
    content = output.content
    return content if isinstance(content, str) else ("" if content is None else str(content))


@dataclass(frozen=True, slots=True)
class EarlyAnswer:
    """A turn's final text, available before the turn is stored; await `stored()` before the thread's next turn."""

    text: str
    storing: asyncio.Future[None]
    usage: TokenUsage = field(default_factory=TokenUsage)

    async def stored(self) -> None:
        """Wait until the turn is in the session store (storage problems are logged, not raised)."""
        await self.storing


async def generate_early(
    request: GenerationRequest, *, storage_root: Path, env: Mapping[str, str], database_url: str | None = None
) -> EarlyAnswer:
    """Answer one turn and return as soon as the text is final, while the session is still being stored.

    The run is not streamed (a stream's events cost more than the wait for one response); agno hands the
    finished run to its post-hooks before it stores the turn, and `_announce_content` passes the text on
    from there, so the reply need not wait for the store. Raises `GenerationError` when the model fails.
    """
    content: asyncio.Future[tuple[str, TokenUsage]] = asyncio.get_running_loop().create_future()

    def announce(output: RunOutput) -> None:
        if not content.done():
            content.set_result((_text_of(output), turn_usage(output.metrics, request.model.provider)))

    async def drive() -> None:
        _EARLY_CONTENT.set(announce)  # in this task's own context: seen by this run's post-hook only
        try:
            result = await generate(request, storage_root=storage_root, env=env, database_url=database_url)
        except GenerationError as exc:
            if not content.done():
                content.set_exception(exc)
            else:
                logger.warning("storing the turn after the answer failed", agent=request.agent_name, error=str(exc))
        except Exception as exc:
            if not content.done():
                content.set_exception(generation_error(exc))
            else:
                logger.warning("storing the turn after the answer failed", agent=request.agent_name, error=str(exc))
        else:
            if not content.done():
                content.set_result((result.text, result.usage))

    storing = asyncio.ensure_future(drive())
    try:
        text, usage = await asyncio.shield(content)
    except BaseException:
        if not storing.done():
            storing.cancel()
        await asyncio.gather(storing, return_exceptions=True)
        raise
    return EarlyAnswer(text, storing, usage)
