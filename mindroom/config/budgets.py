"""`budgets:` (MindRoom's keys): a monthly spending limit per person, and the model used once it is reached; and
this daemon's own `daemon_monthly_limit_usd`, a limit on everyone's spend together."""

from __future__ import annotations

from pydantic import Field

from mindroom.config.strict import StrictModel

__all__ = ["BudgetsConfig"]


class BudgetsConfig(StrictModel):
    """Each person's monthly limit in USD (spent on models with `pricing`), and what happens at the limit."""

    monthly_limit_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The limit of each person without one of their own (`PUT /api/budgets/users/...`); unset: no limit."""
    fallback_model: str | None = None
    """The model a person's turns use once their limit is reached; unset here: those turns are refused."""
    daemon_monthly_limit_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Everyone's spend together in a month (this daemon's own key); past it every turn on a priced model uses
    `fallback_model`, or is refused without one; unset: no such limit."""
