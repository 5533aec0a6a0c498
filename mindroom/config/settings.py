"""`AgentSettings`: one agent's or team's turn settings, its own where it sets them, else `defaults`' (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from mindroom.config.defaults import CompactionOverrideConfig, DefaultsConfig
from mindroom.config.models import ModelConfig

__all__ = ["AgentSettings", "HistoryCompaction", "entity_settings"]


@dataclass(frozen=True, slots=True)
class HistoryCompaction:
    """When a conversation's stored history is folded into a summary, and by which model."""

    enabled: bool = True
    threshold_tokens: int | None = None
    threshold_percent: float | None = None
    window_tokens: int | None = None
    model: str | None = None
    """The model (a key of `models:`) that writes the summary; None: the answering model."""
    fallback_budget: int | None = None
    """`defaults.history_token_budget`: the budget when no threshold applies."""

    def budget(self, model: ModelConfig) -> int | None:
        """Tokens of stored history past which it is folded (None: never), for an answer by `model`."""
        if not self.enabled:
            return None
        if self.threshold_tokens is not None:
            return self.threshold_tokens
        window = self.window_tokens or model.context_window
        if self.threshold_percent is not None and window:
            return max(1, int(window * self.threshold_percent))
        return self.fallback_budget or None


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """An agent's (or team's) effective turn settings."""

    enable_streaming: bool
    markdown: bool
    num_history_runs: int
    num_history_messages: int | None = None
    """When set, the model sees this many earlier messages instead of `num_history_runs` turns."""
    max_tool_calls_from_history: int | None = None
    max_tool_calls_per_turn: int | None = None
    show_tool_calls: bool | None = None
    timezone: str | None = None
    """The zone the agent is told the date in; None when no `timezone` is set anywhere (it is told nothing)."""
    compaction: HistoryCompaction = HistoryCompaction(fallback_budget=12000)

    @property
    def with_history(self) -> bool:
        """Whether the model sees earlier turns at all."""
        return self.num_history_messages is not None or self.num_history_runs > 0


def _compaction(defaults: DefaultsConfig, own: CompactionOverrideConfig | None) -> HistoryCompaction:
    base = defaults.compaction
    if base is None and own is None:
        budget = defaults.history_token_budget
        return HistoryCompaction(enabled=bool(budget), fallback_budget=budget)
    layers = [layer for layer in (base, own) if layer is not None]
    merged: dict[str, object] = {}
    for layer in layers:
        merged.update({key: getattr(layer, key) for key in layer.model_fields_set})
    enabled = merged.get("enabled", True)
    return HistoryCompaction(
        enabled=enabled is not False and enabled is not None,
        threshold_tokens=merged.get("threshold_tokens"),  # type: ignore[arg-type]
        threshold_percent=merged.get("threshold_percent"),  # type: ignore[arg-type]
        window_tokens=merged.get("replay_window_tokens"),  # type: ignore[arg-type]
        model=merged.get("model"),  # type: ignore[arg-type]
        fallback_budget=defaults.history_token_budget,
    )


def entity_settings(
    defaults: DefaultsConfig,
    *,
    enable_streaming: bool | None = None,
    markdown: bool | None = None,
    num_history_runs: int | None = None,
    num_history_messages: int | None = None,
    max_tool_calls_from_history: int | None = None,
    max_tool_calls_per_turn: int | None = None,
    show_tool_calls: bool | None = None,
    timezone: str | None = None,
    compaction: CompactionOverrideConfig | None = None,
) -> AgentSettings:
    """The settings of an entity that sets these (None: unset) under `defaults`."""

    def pick(own: object, default: object) -> object:
        return default if own is None else own

    # One history limit: the entity's own (either kind) wins over both of the defaults'.
    own_limit = num_history_runs is not None or num_history_messages is not None
    return AgentSettings(
        enable_streaming=bool(pick(enable_streaming, defaults.enable_streaming)),
        markdown=bool(pick(markdown, defaults.markdown)),
        num_history_runs=num_history_runs if num_history_runs is not None else defaults.num_history_runs,
        num_history_messages=num_history_messages if own_limit else defaults.num_history_messages,
        max_tool_calls_from_history=pick(max_tool_calls_from_history, defaults.max_tool_calls_from_history),  # type: ignore[arg-type]
        max_tool_calls_per_turn=pick(max_tool_calls_per_turn, defaults.max_tool_calls_per_turn),  # type: ignore[arg-type]
        show_tool_calls=pick(show_tool_calls, defaults.show_tool_calls),  # type: ignore[arg-type]
        timezone=timezone,
        compaction=_compaction(defaults, compaction),
    )
