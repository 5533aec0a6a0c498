"""`teams:` (MindRoom's `TeamConfig`): several agents answering as one entity with its own Matrix account.

A team's leader (its `model`) runs agno's team in the configured `mode`: `coordinate` hands chosen members
sub-tasks and synthesises, `collaborate` gives every member the same task and synthesises (agno's
`broadcast`), `route` passes the question to one member whose answer is the team's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mindroom.config.access import InvitePolicy, ResponderAccessConfig
from mindroom.config.defaults import CompactionOverrideConfig, one_history_limit
from mindroom.config.strict import StrictModel

__all__ = ["TEAM_MODES", "TeamConfig", "TeamMode", "private_agent_reached", "team_problems"]

TeamMode = Literal["coordinate", "collaborate", "route"]
"""How the leader works with the members (MindRoom's two modes, and agno's `route`)."""
TEAM_MODES: tuple[TeamMode, ...] = ("coordinate", "collaborate", "route")


class TeamConfig(StrictModel):
    """One team: its Matrix identity, members, leader model, mode and rooms."""

    display_name: str
    role: str
    """The team's purpose: the router and the OpenAI-compatible API show it; the leader reads it."""
    agents: list[str] = Field(min_length=1)
    """The member agents (keys under `agents:`), in the order their parts are shown."""
    rooms: list[str] = Field(default_factory=list)
    model: str = "default"
    """The leader's model (coordination and synthesis)."""
    mode: TeamMode = "coordinate"
    accept_invites: InvitePolicy = "authorized"
    access: ResponderAccessConfig | None = None
    num_history_runs: int | None = Field(default=None, ge=0)
    num_history_messages: int | None = Field(default=None, ge=1)
    max_tool_calls_from_history: int | None = Field(default=None, ge=0)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    """The leader's tool calls in one turn, hand-offs to members included (each member keeps its own)."""
    compaction: CompactionOverrideConfig | None = None
    enable_streaming: bool | None = None
    markdown: bool | None = None
    password: str | None = None
    member_timeout_seconds: float = Field(default=120.0, gt=0)
    """A member that has not answered by then is named in the answer as timed out; the team answers without it."""

    @model_validator(mode="after")
    def _one_limit(self) -> TeamConfig:
        one_history_limit(self.num_history_runs, self.num_history_messages)
        return self

    @field_validator("agents")
    @classmethod
    def _distinct_members(cls, members: list[str]) -> list[str]:
        if len(set(members)) != len(members):
            msg = f"a team lists each agent once (not {members})"
            raise ValueError(msg)
        return members


def team_problems(teams: Mapping[str, TeamConfig], agents: Mapping[str, Any], reserved: str) -> list[str]:
    """What is wrong between `teams:` and `agents:`: names both use, unknown members, private members (or members
    reaching a private agent through `delegate_to`)."""
    problems = []
    for name, team in teams.items():
        if name in agents:
            problems.append(f"teams.{name}: the name is an agent's too (an agent and a team need distinct names)")
        if name == reserved:
            problems.append(f"teams.{name}: the name is reserved for the router")
        unknown = [member for member in team.agents if member not in agents]
        if unknown:
            problems.append(f"teams.{name}.agents: unknown agents {unknown} (known: {', '.join(agents) or 'none'})")
        for member in team.agents:
            private = private_agent_reached(member, agents)
            if private == member:
                problems.append(f"teams.{name}.agents: {member!r} is a private agent (a team has shared members only)")
            elif private is not None:
                problems.append(
                    f"teams.{name}.agents: {member!r} reaches the private agent {private!r} through delegate_to"
                    " (a team has shared members only)"
                )
    return problems


def private_agent_reached(start: str, agents: Mapping[str, Any]) -> str | None:
    """The first private agent `start` is or hands questions to through `delegate_to`, transitively; else None."""
    seen: set[str] = set()
    waiting = [start]
    while waiting:
        name = waiting.pop(0)
        agent = agents.get(name)
        if name in seen or agent is None:
            continue
        seen.add(name)
        if getattr(agent, "private", None) is not None:
            return name
        waiting.extend(getattr(agent, "delegate_to", ()))
    return None
