"""What a team's turn is made of, free of agno: its mode, its members and how long each may take.

The pipeline builds a `TeamPlan` for a team's turn (`mindroom.bots.answerer`); `mindroom.ai.teams.team` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mindroom.config.main import ModelConfig

__all__ = ["TeamMember", "TeamPlan"]


@dataclass(frozen=True, slots=True)
class TeamMember:
    """One member agent as the team runs it: identity, model, instructions and its own tools."""

    name: str
    display_name: str
    role: str
    instructions: tuple[str, ...]
    model: ModelConfig
    tools: tuple[Any, ...] = ()
    markdown: bool = True


@dataclass(frozen=True, slots=True)
class TeamPlan:
    """How a team answers: its mode (`coordinate`, `collaborate`, `route`), members, and how long each may take."""

    mode: str
    members: tuple[TeamMember, ...]
    member_timeout_s: float = 120.0
