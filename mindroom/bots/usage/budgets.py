"""`budgets:` at a turn's start: the model a person's turn uses under their monthly limit, or why it is refused.

Only models with `pricing` count against a limit, and only they are switched: an unpriced model costs nothing
tracked. The decision is taken once, before the model runs, so a turn that starts under the limit finishes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from mindroom.config.main import Config

__all__ = [
    "WARN_SHARE",
    "BudgetCall",
    "budget_call",
    "budget_limit",
    "crossed_daemon_warning",
    "crossed_warning",
    "reset_day",
    "usd",
]

WARN_SHARE = 0.8
"""The share of a limit at which the person is warned (once a month: the spend crosses it once)."""


@dataclass(frozen=True, slots=True)
class BudgetCall:
    """The model a turn runs with, and the message it is refused with instead (None: it runs)."""

    model_name: str
    refusal: str | None = None


def budget_limit(config: Config, own: float | None = None) -> float | None:
    """A person's monthly limit in USD: their own (`own`), else `budgets.monthly_limit_usd`; None: no limit (and
    none at all without `budgets:`)."""
    if config.budgets is None:
        return None
    return own if own is not None else config.budgets.monthly_limit_usd


def usd(amount: float) -> str:
    """An amount in dollars: cents, or four decimals below one dollar (limits in tests and trials are small)."""
    return f"${amount:.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"


def reset_day(reset_at: float) -> str:
    """The UTC day (`YYYY-MM-DD`) a budget starts again."""
    return dt.datetime.fromtimestamp(reset_at, dt.UTC).strftime("%Y-%m-%d")


def budget_call(
    config: Config,
    requester: str,
    model_name: str,
    spend: Callable[[str], float],
    reset_at: float,
    own: float | None = None,
    total: Callable[[], float] | None = None,
) -> BudgetCall:
    """The model `requester`'s turn runs with (their limit, or the daemon's over everyone's spend `total`, reached:
    the fallback), or the refusal naming the reset; `own` is the person's own limit, if they have one."""
    model = config.models.get(model_name)
    if config.budgets is None or model is None or model.pricing is None:
        return BudgetCall(model_name)
    daemon_limit = config.budgets.daemon_monthly_limit_usd
    if daemon_limit is not None and total is not None and (spent_by_all := total()) >= daemon_limit:
        refusal = (
            f"This service's monthly budget of {usd(daemon_limit)} is used up ({usd(spent_by_all)} spent this "
            f"month). It resets on {reset_day(reset_at)} (UTC)."
        )
        return _at_limit(config, model_name, refusal)
    limit = budget_limit(config, own)
    if limit is None or not requester:
        return BudgetCall(model_name)
    spent = spend(requester)
    if spent < limit:
        return BudgetCall(model_name)
    refusal = (
        f"Your monthly budget of {usd(limit)} is used up ({usd(spent)} spent this month). "
        f"It resets on {reset_day(reset_at)} (UTC)."
    )
    return _at_limit(config, model_name, refusal)


def _at_limit(config: Config, model_name: str, refusal: str) -> BudgetCall:
    fallback = config.budgets.fallback_model if config.budgets is not None else None
    return BudgetCall(fallback) if fallback is not None else BudgetCall(model_name, refusal)


def crossed_warning(config: Config, before: float, after: float, own: float | None = None) -> float | None:
    """The limit whose warning share a turn's cost crossed (spend `before` -> `after`); None when it crossed none."""
    return _crossed(budget_limit(config, own), before, after)


def crossed_daemon_warning(config: Config, before: float, after: float) -> float | None:
    """The daemon's limit, when a turn's cost took everyone's spend (`before` -> `after`) past its warning share."""
    return _crossed(config.budgets.daemon_monthly_limit_usd if config.budgets is not None else None, before, after)


def _crossed(limit: float | None, before: float, after: float) -> float | None:
    if limit is None or limit <= 0:
        return None
    line = WARN_SHARE * limit
    return limit if before < line <= after else None
