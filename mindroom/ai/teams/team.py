"""A team's turn through agno's `Team`: a leader model and member agents, run in the configured mode.

Generation treats a team like an agent (`build_team` is its builder when the request carries a `TeamPlan`):
`TurnTeam.arun` streams the team's answer as an agent's text deltas, and a finished run's content is the
answer as people read it (`TeamTranscript`: each member's part, then the consensus), so streaming, early
answers, history and edits work as they do for one agent. Members are `MemberAgent`s: one that has not
answered within the team's `member_timeout_seconds` is cut off and named in the answer; the team goes on.
A member's tools are the member's own (its name reaches the tool hooks and approval rules).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

from agno.db.base import AsyncBaseDb
from agno.run.agent import (
    RunCancelledEvent,
    RunCompletedEvent,
    RunContentCompletedEvent,
    RunContentEvent,
    RunErrorEvent,
    RunOutput,
    RunStartedEvent,
)
from agno.run.base import RunStatus
from agno.run.team import RunCancelledEvent as TeamCancelled
from agno.run.team import RunCompletedEvent as TeamCompleted
from agno.run.team import RunContentCompletedEvent as TeamContentCompleted
from agno.run.team import RunContentEvent as TeamContent
from agno.run.team import RunErrorEvent as TeamError
from agno.team import Team
from agno.team.mode import TeamMode

from mindroom.ai.agents import agent_cache
from mindroom.ai.model_hooks import as_agent
from mindroom.ai.models import model_env_fingerprint
from mindroom.ai.sessions.history import strip_run_output_enrichment
from mindroom.ai.teams.plan import TeamMember, TeamPlan
from mindroom.ai.teams.transcript import TeamTranscript
from mindroom.ai.turn_agent import TurnAgent, run_system_block
from mindroom.ai.turn_options import TurnOptions, history_options
from mindroom.config.main import ModelConfig

__all__ = ["MEMBER_TIMEOUT_NOTE", "LeaderRequest", "MemberAgent", "TurnTeam", "build_team", "team_fingerprint"]

MEMBER_TIMEOUT_NOTE = "no answer within"
_AGNO_MODES = {"coordinate": TeamMode.coordinate, "collaborate": TeamMode.broadcast, "route": TeamMode.route}
_FAILED = "its model failed."


class LeaderRequest(Protocol):
    """What building a team reads of a generation request (the leader's identity and settings, and the plan)."""

    @property
    def agent_name(self) -> str:
        """The team's name (its session store's too)."""

    @property
    def display_name(self) -> str:
        """The team's display name."""

    @property
    def role(self) -> str:
        """The team's purpose."""

    @property
    def instructions(self) -> tuple[str, ...]:
        """The leader's instructions."""

    @property
    def model(self) -> ModelConfig:
        """The leader's model."""

    @property
    def num_history_runs(self) -> int:
        """How many earlier turns of the thread the leader reads."""

    @property
    def options(self) -> TurnOptions:
        """The leader's history and tool-call limits."""

    @property
    def markdown(self) -> bool:
        """Whether the answer is markdown."""

    @property
    def team(self) -> TeamPlan | None:
        """The members and mode."""


def team_fingerprint(plan: TeamPlan, env: Mapping[str, str]) -> tuple[Any, ...]:
    """What a cached team was built from: it is rebuilt when any of this changes."""
    members = tuple(
        (
            member.name,
            member.display_name,
            member.role,
            member.instructions,
            member.model.model_dump_json(),
            model_env_fingerprint(member.model, env),
            tuple(id(tool) for tool in member.tools),
            member.markdown,
        )
        for member in plan.members
    )
    return (plan.mode, plan.member_timeout_s, members)


def _failure_reason(content: Any) -> str:
    """What a failed member's run says, in words safe to show (a provider's error text never is)."""
    return content if isinstance(content, str) and content.startswith(MEMBER_TIMEOUT_NOTE) else _FAILED


class MemberAgent(TurnAgent):
    """A team member: its runs end at the team's member timeout with an error run naming the wait."""

    def arun(self, input: Any, *, stream: bool | None = None, **kwargs: Any) -> Any:  # type: ignore[override]
        """agno's run, cut off after `member_timeout_s` (as an error run, so the team goes on without it)."""
        run_agent: Any = super().arun
        run = run_agent(input, stream=stream, **kwargs)
        if self.id:
            run = as_agent(self.id, run)
        limit = float(self.__dict__.get("_member_timeout_s", 0.0))
        if not limit:
            return run
        note = f"{MEMBER_TIMEOUT_NOTE} {limit:g} s."
        ids = {"agent_id": self.id or "", "agent_name": self.name or "", "run_id": kwargs.get("run_id")}
        if inspect.isawaitable(run):
            return self._timed(run, limit, note, ids, kwargs.get("session_id"))
        return self._timed_events(run, limit, note, ids, kwargs.get("session_id"))

    async def _timed(self, run: Any, limit: float, note: str, ids: dict[str, Any], session_id: Any) -> Any:
        try:
            async with asyncio.timeout(limit) as deadline:
                return await run
        except TimeoutError:
            if not deadline.expired():
                raise
        return RunOutput(**ids, session_id=session_id, content=note, status=RunStatus.error)

    async def _timed_events(
        self, events: Any, limit: float, note: str, ids: dict[str, Any], session_id: Any
    ) -> AsyncIterator[Any]:
        iterator = aiter(events)
        deadline = asyncio.get_running_loop().time() + limit
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline) as scope:
                        event = await anext(iterator)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if not scope.expired():
                        raise
                    yield RunErrorEvent(**ids, session_id=session_id, content=note, error_type="member_timeout")
                    yield RunOutput(**ids, session_id=session_id, content=note, status=RunStatus.error)
                    return
                yield event
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()


class TurnTeam(Team):
    """agno's Team whose runs look like one agent's to generation: text deltas of the shown answer."""

    @property  # type: ignore[override]
    def additional_context(self) -> str | None:
        """The team's own additional context, then this run's system block (`system:enrich`)."""
        parts = [self.__dict__.get("_own_additional_context"), run_system_block()]
        return "\n".join(part for part in parts if part) or None

    @additional_context.setter
    def additional_context(self, value: str | None) -> None:
        self.__dict__["_own_additional_context"] = value

    def _transcript(self) -> TeamTranscript:
        plan: TeamPlan = self.__dict__["_plan"]
        return TeamTranscript({m.name: m.display_name for m in plan.members}, routed=plan.mode == "route")

    def arun(self, input: Any, *, stream: bool | None = None, **kwargs: Any) -> Any:  # type: ignore[override]
        """agno's team run; streamed, its events become an agent's: the shown answer's deltas, then completion."""
        run_team: Any = super().arun
        run = run_team(input, stream=stream, **kwargs)
        return run if inspect.isawaitable(run) else self._shown(run)

    async def _shown(self, events: Any) -> AsyncIterator[Any]:
        transcript = self._transcript()
        async for event in events:
            delta = ""
            if isinstance(event, TeamContent):
                delta = transcript.leader(event.content) if isinstance(event.content, str) else ""
            elif isinstance(event, RunStartedEvent) and transcript.routed:
                delta = transcript.routed_to(event.agent_id)
            elif isinstance(event, RunCompletedEvent) and not transcript.routed:
                delta = transcript.member(event.agent_id, event.content if isinstance(event.content, str) else "")
            elif isinstance(event, RunErrorEvent | RunCancelledEvent):
                delta = transcript.member_failed(event.agent_id, _failure_reason(getattr(event, "content", None)))
            elif isinstance(event, TeamContentCompleted):
                if ended := transcript.end():
                    yield RunContentEvent(agent_id=self.id or "", content=ended)
                yield RunContentCompletedEvent(agent_id=self.id or "")
            elif isinstance(event, TeamCompleted):
                yield RunCompletedEvent(agent_id=self.id or "", content=transcript.text, metrics=event.metrics)
            elif isinstance(event, TeamError):
                yield RunErrorEvent(agent_id=self.id or "", content=event.content, error_type=event.error_type)
            elif isinstance(event, TeamCancelled):
                yield RunCancelledEvent(agent_id=self.id or "", reason=event.reason)
            if delta:
                yield RunContentEvent(agent_id=self.id or "", content=delta)

    def shown_answer(self, run_output: Any) -> None:
        """agno post-hook: the finished run's content becomes the answer as shown (members' parts, consensus)."""
        transcript = self._transcript()
        responses = list(getattr(run_output, "member_responses", None) or [])
        for response in responses:
            if response.status in (RunStatus.error, RunStatus.cancelled):
                transcript.member_failed(response.agent_id, _failure_reason(response.content))
            elif transcript.routed:
                transcript.routed_to(response.agent_id)
                transcript.leader(response.content if isinstance(response.content, str) else "")
            else:
                transcript.member(response.agent_id, response.content if isinstance(response.content, str) else "")
        if not (transcript.routed and responses):
            transcript.leader(run_output.content if isinstance(run_output.content, str) else "")
        transcript.end()
        run_output.content = transcript.text


def _member(member: TeamMember, env: Mapping[str, str], timeout_s: float) -> MemberAgent:
    agent = MemberAgent(
        id=member.name,
        name=member.display_name,
        role=member.role or None,
        model=agent_cache.model(member.model, env),
        instructions=list(member.instructions) or None,
        markdown=member.markdown,
        add_name_to_context=True,
        tools=list(member.tools) or None,
        telemetry=False,
    )
    agent.__dict__["_member_timeout_s"] = timeout_s
    return agent


def build_team(
    request: LeaderRequest, db: AsyncBaseDb, env: Mapping[str, str], announce: Callable[[Any], None]
) -> TurnTeam:
    """The agno team for `request` (its `team` plan set), storing its sessions in `db`.

    `announce` is generation's post-hook that passes a finished answer on before it is stored.
    """
    plan = request.team
    assert plan is not None
    team = TurnTeam(
        id=request.agent_name,
        name=request.display_name,
        role=request.role or None,
        description=request.role or None,
        model=agent_cache.model(request.model, env),
        members=[_member(member, env, plan.member_timeout_s) for member in plan.members],
        mode=_AGNO_MODES[plan.mode],
        db=db,
        instructions=list(request.instructions) or None,
        markdown=request.markdown,
        add_name_to_context=True,
        **history_options(request.num_history_runs, request.options),
        telemetry=False,
    )
    team.__dict__["_plan"] = plan
    team.post_hooks = [strip_run_output_enrichment, team.shown_answer, announce]
    return team
