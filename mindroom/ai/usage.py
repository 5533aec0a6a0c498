"""Token usage of a turn: what the agent's model read and wrote, over every model call the turn made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TokenUsage", "turn_usage"]

_CACHE_APART = frozenset({"anthropic", "bedrock_claude", "vertexai_claude"})
"""Providers that count cached input apart from `input_tokens` (the others count it inside)."""


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one turn: `input_tokens` counts everything the model read, `cached_tokens` the part of it
    that came from the provider's prompt cache (cheaper), `output_tokens` what it wrote."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input and output together."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


def _count(metrics: Any, name: str) -> int:
    value = getattr(metrics, name, 0)
    return value if isinstance(value, int) else 0


def turn_usage(metrics: Any, provider: str) -> TokenUsage:
    """The usage in agno's run metrics (`RunMetrics`, or None for a run that reported none) of a `provider` model."""
    if metrics is None:
        return TokenUsage()
    read = _count(metrics, "cache_read_tokens")
    input_tokens = _count(metrics, "input_tokens")
    if provider in _CACHE_APART:
        input_tokens += read + _count(metrics, "cache_write_tokens")
    return TokenUsage(input_tokens, _count(metrics, "output_tokens"), read)
