"""What a turn cost, from its model's `pricing` (USD per million tokens)."""

from __future__ import annotations

from mindroom.config.models import ModelPricing

__all__ = ["turn_cost"]

_PER = 1_000_000


def turn_cost(pricing: ModelPricing | None, input_tokens: int, output_tokens: int, cached_tokens: int) -> float | None:
    """The cost in USD of one turn's tokens; None for a model without pricing (its tokens still count).

    `input_tokens` includes the cached part, which is charged at `cache_read` (the input price when unset).
    """
    if pricing is None:
        return None
    cached = min(max(cached_tokens, 0), max(input_tokens, 0))
    cache_price = pricing.input if pricing.cache_read is None else pricing.cache_read
    fresh = max(input_tokens, 0) - cached
    return (fresh * pricing.input + cached * cache_price + max(output_tokens, 0) * pricing.output) / _PER
