"""A prompt too long for the model's context window: fold the conversation's history, then try once more.

Generation calls `shorten_history` when the provider refused a turn as too long. The history is folded to
half of what it is now (and to at most half the model's `context_window`), through the request's own
`shorten_history` when the caller gave one (the bots' one also runs the compaction hooks), else here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

from mindroom.ai.compaction import compact_history, history_tokens
from mindroom.config.main import ModelConfig
from mindroom.logging_config import get_logger

__all__ = ["HistoryShortener", "shorten_history"]

HistoryShortener = Callable[[int], Awaitable[bool]]
"""Folds a conversation's history to at most the given tokens; True when it folded something."""


class _Turn(Protocol):
    """What of a `GenerationRequest` the folding needs."""

    @property
    def agent_name(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def model(self) -> ModelConfig: ...
    @property
    def num_history_runs(self) -> int: ...
    @property
    def shorten_history(self) -> HistoryShortener | None: ...


logger = get_logger(__name__)


async def shorten_history(turn: _Turn, storage_root: Path, env: Mapping[str, str], database_url: str | None) -> bool:
    """Fold the turn's history to half its size; True when something was folded (a retry may then fit)."""
    agent_name, session_id, model, num_history_runs = (
        turn.agent_name,
        turn.session_id,
        turn.model,
        turn.num_history_runs,
    )
    if num_history_runs <= 0:
        return False
    tokens = await history_tokens(agent_name, session_id, storage_root=storage_root, database_url=database_url)
    budget = tokens // 2
    if model.context_window:
        budget = min(budget, model.context_window // 2)
    if budget <= 0:
        return False  # no history to fold: the message alone is too long
    logger.info("prompt too long; folding history", agent=agent_name, tokens=tokens, budget=budget)
    if turn.shorten_history is not None:
        return await turn.shorten_history(budget)
    result = await compact_history(
        agent_name,
        session_id,
        model=model,
        budget=budget,
        num_history_runs=num_history_runs,
        storage_root=storage_root,
        env=env,
        database_url=database_url,
    )
    return result is not None
