"""Small top-level sections of `config.yaml` (`storage:`; `voice:` lives in `mindroom.config.voice`), and the
checks across sections.

`reference_problems` is what `Config` checks once every section is read: each model, member and hand-off
named anywhere exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator

from mindroom.config.strict import StrictModel
from mindroom.config.teams import TeamConfig, team_problems
from mindroom.config.voice import SpeechToTextConfig, VoiceConfig

__all__ = ["KnowledgeRerankerConfig", "SpeechToTextConfig", "StorageConfig", "VoiceConfig", "reference_problems"]


class KnowledgeRerankerConfig(StrictModel):
    """MindRoom's `knowledge_reranker`: search hits reordered by a reranking model after the hybrid search."""

    provider: Literal["cohere", "sentence_transformers", "vertex_ai"]
    model: str
    url: str | None = None
    """A Cohere-format `/rerank` endpoint (unset: Cohere's own, `https://api.cohere.com/v2/rerank`)."""
    api_key: str | None = None
    """Unset: `COHERE_API_KEY`."""


class StorageConfig(StrictModel):
    """Where the daemon keeps its durable state; `MINDROOM_DATABASE_URL` in the environment wins over this."""

    database_url: str | None = None
    """`postgresql://user:password@host:5432/db` puts every piece of state there; unset: SQLite files."""
    usage_retention_days: int = Field(default=90, ge=1)
    """Days each turn's usage is kept as it is; older turns are summed per day, person, agent, room and model."""

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if value and not value.startswith(("postgresql://", "postgres://")):
            msg = "database_url must be a postgresql:// URL (or unset for SQLite files under the data directory)"
            raise ValueError(msg)
        return value or None


def _unknown_model(where: str, model: str, models: Mapping[str, Any]) -> str | None:
    if model in models or (model == "default" and not models):
        return None
    return f"{where}: unknown model {model!r} (known: {', '.join(sorted(models)) or 'none'})"


def reference_problems(
    *,
    models: Mapping[str, Any],
    agents: Mapping[str, Any],
    teams: Mapping[str, TeamConfig],
    router_model: str,
    room_models: Mapping[str, str],
    reserved: str,
    summary_models: Mapping[str, str | None] | None = None,
) -> list[str]:
    """Every model, team member and hand-off target named in config that does not exist (`summary_models`: the
    thread summaries' models by their key, None where unset)."""
    wanted = [(f"agents.{name}.model", agent.model) for name, agent in agents.items()]
    if len(agents) + len(teams) > 1:
        wanted.append(("router.model", router_model))
    wanted += [(f"teams.{name}.model", team.model) for name, team in teams.items()]
    wanted += [(f"room_models.{room}", model) for room, model in room_models.items()]
    wanted += [(where, model) for where, model in (summary_models or {}).items() if model is not None]
    problems = [problem for where, model in wanted if (problem := _unknown_model(where, model, models))]
    for name, agent in agents.items():
        for target in agent.delegate_to:
            if target == name or target not in agents:
                why = "itself" if target == name else f"an unknown agent (known: {', '.join(agents)})"
                problems.append(f"agents.{name}.delegate_to: {target!r} is {why}")
    return problems + team_problems(teams, agents, reserved)
