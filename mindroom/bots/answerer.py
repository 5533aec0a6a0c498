"""`Answerer`: who answers one turn and with what, for an agent or a team, with the chat's settings applied.

The answer's stages (`mindroom.bots.respond`) read everything they need of the entity here: its name and
display name, its instructions (its own, its skills', and those set from chat for this room or thread),
the model this turn uses (thread, room, `room_models`, its own: `ChatSettings.model_name`), its turn
settings and, for a team, the `TeamPlan` its members answer with (each member with its own tools, so
their calls reach the tool hooks and approval rules under the member's name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from mindroom.ai.teams.plan import TeamMember, TeamPlan
from mindroom.ai.turn_options import TurnOptions
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.turn_context import DEFAULT_HIDDEN_TOOL_CALLS
from mindroom.config.main import AgentConfig, AgentSettings, Config
from mindroom.hooks.transport import ResponseKind

__all__ = ["Answerer", "ExtraTools", "Roster", "answerer_for"]


class Roster(Protocol):
    """Who is where, as answering needs it: a room's names in config, and the running entities."""

    @property
    def entities(self) -> Mapping[str, Entity]:
        """The running bots, by name."""

    def room_keys(self, room_id: str) -> AbstractSet[str]:
        """Every name config may give this room."""


class ExtraTools(Protocol):
    """Tools an agent gets beyond its `tools:`: its knowledge search (`TurnMind`), its hand-off (`HandoffDesk`)."""

    def tools(self, config: Config, agent_name: str) -> tuple[Any, ...]:
        """The extra tools of `agent_name` under `config`."""


@dataclass(frozen=True, slots=True)
class Answerer:
    """The entity a turn is for, as the answer's stages use it (`team` set for a team's turn)."""

    name: str
    display_name: str
    role: str
    instructions: tuple[str, ...]
    model_name: str
    settings: AgentSettings
    team: TeamPlan | None = None
    tools: tuple[Any, ...] = ()
    """An agent's tools beyond its `tools:` (knowledge search, hand-off)."""

    @property
    def response_kind(self) -> ResponseKind:
        """`team` for a team's answer, `ai` for an agent's."""
        return "team" if self.team is not None else "ai"

    @property
    def options(self) -> TurnOptions:
        """The turn's history and tool-call limits, and whether its tool calls are marked in the answer."""
        settings = self.settings
        return TurnOptions(
            num_history_messages=settings.num_history_messages,
            max_tool_calls_from_history=settings.max_tool_calls_from_history,
            tool_call_limit=settings.max_tool_calls_per_turn,
            show_tool_calls=settings.show_tool_calls is True,
        )

    @property
    def member_names(self) -> tuple[str, ...] | None:
        """A team's members (the hooks' `target_member_names`); None for an agent."""
        return tuple(member.name for member in self.team.members) if self.team is not None else None


def _agent_instructions(
    live: LiveState, name: str, agent: AgentConfig, room_id: str, thread_id: str | None
) -> tuple[str, ...]:
    extra = live.settings.instructions(name, room_id, thread_id)
    # `show_tool_calls: false` (MindRoom's setting): the model is told its calls are not seen.
    hidden = agent.show_tool_calls is False or (
        agent.show_tool_calls is None and live.config.defaults.show_tool_calls is False
    )
    told = (live.config.prompt("HIDDEN_TOOL_CALLS_PROMPT", DEFAULT_HIDDEN_TOOL_CALLS),) if hidden else ()
    return (*agent.instructions, *live.skills.instructions(agent.skills), *extra, *told)


def answerer_for(
    live: LiveState,
    name: str,
    room_id: str,
    thread_id: str | None,
    roster: Roster | None = None,
    extras: Sequence[ExtraTools | None] = (),
) -> Answerer | None:
    """The answerer `name` is in this room and thread under `live`; None when it is neither agent nor team.

    `roster` gives the room's names (for `room_models`) and the members' running bots (for their tools);
    `extras` what adds tools beyond an agent's own `tools:`.
    """
    config = live.config
    keys = roster.room_keys(room_id) if roster is not None else frozenset()

    def extra_tools(agent: str) -> tuple[Any, ...]:
        return tuple(tool for extra in extras if extra is not None for tool in extra.tools(config, agent))

    def model_of(own: str) -> str:
        return live.settings.model_name(config.models, config.room_models, own, room_id, thread_id, keys)

    agent = config.agents.get(name)
    if agent is not None:
        return Answerer(
            name,
            agent.display_name,
            agent.role,
            _agent_instructions(live, name, agent, room_id, thread_id),
            model_of(agent.model),
            config.settings_for(name),
            None,
            extra_tools(name),
        )
    team = config.teams.get(name)
    if team is None:
        return None
    members = []
    for member_name in team.agents:
        member = config.agents[member_name]
        model = config.models.get(model_of(member.model))
        if model is None:
            continue  # a member without a usable model cannot take part (the team answers without it)
        running = roster.entities.get(member_name) if roster is not None else None
        own = running.tools(live) if running is not None else ()
        tools = (*own, *extra_tools(member_name))
        members.append(
            TeamMember(
                member_name,
                member.display_name,
                member.role,
                _agent_instructions(live, member_name, member, room_id, thread_id),
                model,
                tools,
                member.resolved(config.defaults).markdown,
            )
        )
    settings = config.settings_for(name)
    return Answerer(
        name,
        team.display_name,
        team.role,
        live.settings.instructions(name, room_id, thread_id),
        model_of(team.model),
        settings,
        TeamPlan(team.mode, tuple(members), team.member_timeout_seconds),
    )
