"""A turn's cost from its model's pricing, and the budget decision at a turn's start: the asked model under the
limit, the fallback at it, a refusal naming the reset date when there is no fallback; the 80 % warning once."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from mindroom.bots.usage.budgets import BudgetCall, budget_call, crossed_daemon_warning, crossed_warning
from mindroom.bots.usage.cost import turn_cost
from mindroom.config.main import Config
from mindroom.config.models import ModelPricing

RESET = dt.datetime(2026, 4, 1, tzinfo=dt.UTC).timestamp()
PRICED = {"provider": "openai", "id": "big", "pricing": {"input": 3.0, "output": 15.0, "cache_read": 0.3}}


def _config(budgets: dict[str, Any] | None) -> Config:
    models = {"big": PRICED, "small": {**PRICED, "id": "small"}, "local": {"provider": "ollama", "id": "l"}}
    raw: dict[str, Any] = {"models": models, "agents": {"helper": {"display_name": "Helper", "model": "big"}}}
    if budgets is not None:
        raw["budgets"] = budgets
    return Config.model_validate(raw)


def test_cost_charges_cached_input_at_the_cache_price_and_unpriced_models_nothing():
    pricing = ModelPricing(input=3.0, output=15.0, cache_read=0.3)
    # 1M input of which 400k cached, 100k output: 600k * 3 + 400k * 0.3 + 100k * 15, per million.
    assert turn_cost(pricing, 1_000_000, 100_000, 400_000) == pytest.approx(1.8 + 0.12 + 1.5)
    assert turn_cost(ModelPricing(input=3.0, output=15.0), 1000, 0, 1000) == pytest.approx(0.003)  # unset: input
    assert turn_cost(pricing, 10, 0, 50) == pytest.approx(0.3 * 10 / 1e6)  # never more cached than read
    assert turn_cost(None, 1000, 1000, 0) is None


def test_budget_turns_run_as_asked_under_the_limit_and_with_the_fallback_at_it():
    config = _config({"monthly_limit_usd": 1.0, "fallback_model": "small"})
    spend = {"@alice:hs": 0.999, "@bob:hs": 1.0}.get

    assert budget_call(config, "@alice:hs", "big", lambda who: spend(who) or 0.0, RESET) == BudgetCall("big")
    assert budget_call(config, "@bob:hs", "big", lambda who: spend(who) or 0.0, RESET) == BudgetCall("small")
    assert budget_call(config, "@bob:hs", "local", lambda who: 5.0, RESET) == BudgetCall("local")  # costs nothing
    assert budget_call(config, "@bob:hs", "small", lambda who: 5.0, RESET) == BudgetCall("small")


def test_budget_without_a_fallback_refuses_at_the_limit_naming_the_reset_date():
    config = _config({"monthly_limit_usd": 2.5})

    call = budget_call(config, "@bob:hs", "big", lambda who: 2.5, RESET)

    assert call.model_name == "big"
    assert (
        call.refusal
        == "Your monthly budget of $2.50 is used up ($2.50 spent this month). It resets on 2026-04-01 (UTC)."
    )
    assert budget_call(config, "@bob:hs", "big", lambda who: 2.49, RESET).refusal is None
    small = budget_call(_config({"monthly_limit_usd": 0.002}), "@bob:hs", "big", lambda who: 0.00345, RESET)
    assert small.refusal is not None and small.refusal.startswith("Your monthly budget of $0.0020 is used up ($0.0034")


def test_budget_without_budgets_or_a_limit_leaves_every_turn_alone():
    for config in (_config(None), _config({"fallback_model": "small"})):
        assert budget_call(config, "@bob:hs", "big", lambda who: 1e9, RESET) == BudgetCall("big")
        assert crossed_warning(config, 0.0, 1e9) is None


def test_budget_warning_is_given_by_the_turn_that_crosses_eighty_percent_only():
    config = _config({"monthly_limit_usd": 10.0, "fallback_model": "small"})

    assert crossed_warning(config, 7.9, 8.0) == 10.0
    assert crossed_warning(config, 7.0, 9.5) == 10.0
    assert crossed_warning(config, 8.0, 9.0) is None  # warned already this month
    assert crossed_warning(config, 7.0, 7.99) is None


def test_budget_fallback_must_be_a_configured_model():
    with pytest.raises(ValueError, match=r"budgets.fallback_model: unknown model 'smal' \(known: big, local, small\)"):
        _config({"monthly_limit_usd": 1.0, "fallback_model": "smal"})


def test_budget_a_persons_own_limit_comes_before_the_default_and_needs_budgets():
    config = _config({"monthly_limit_usd": 10.0, "fallback_model": "small"})

    assert budget_call(config, "@bob:hs", "big", lambda who: 3.0, RESET, own=2.0) == BudgetCall("small")
    assert budget_call(config, "@bob:hs", "big", lambda who: 3.0, RESET, own=20.0) == BudgetCall("big")
    assert budget_call(config, "@bob:hs", "big", lambda who: 0.0, RESET, own=0.0) == BudgetCall("small")
    assert crossed_warning(config, 1.0, 1.7, own=2.0) == 2.0
    assert budget_call(_config(None), "@bob:hs", "big", lambda who: 3.0, RESET, own=2.0) == BudgetCall("big")


def test_budget_the_daemons_limit_over_everyones_spend_falls_back_or_refuses_naming_the_reset():
    with_fallback = _config({"daemon_monthly_limit_usd": 50.0, "fallback_model": "small"})
    refusing = _config({"daemon_monthly_limit_usd": 50.0, "monthly_limit_usd": 100.0})
    nobody = lambda who: 0.0  # noqa: E731  # each person far under their own limit

    assert budget_call(with_fallback, "@alice:hs", "big", nobody, RESET, total=lambda: 49.99) == BudgetCall("big")
    assert budget_call(with_fallback, "@alice:hs", "big", nobody, RESET, total=lambda: 50.0) == BudgetCall("small")
    call = budget_call(refusing, "@alice:hs", "big", nobody, RESET, total=lambda: 50.01)
    assert call.model_name == "big" and call.refusal == (
        "This service's monthly budget of $50.00 is used up ($50.01 spent this month). It resets on 2026-04-01 (UTC)."
    )
    # A turn without a requester (a schedule's) counts against the daemon's limit too; an unpriced model never.
    assert budget_call(refusing, "", "big", nobody, RESET, total=lambda: 60.0).refusal is not None
    assert budget_call(refusing, "@alice:hs", "local", nobody, RESET, total=lambda: 60.0) == BudgetCall("local")
    assert budget_call(_config({"monthly_limit_usd": 100.0}), "@a:hs", "big", nobody, RESET, total=lambda: 1e9) == (
        BudgetCall("big")
    )


def test_budget_the_daemons_warning_is_given_once_at_eighty_percent_of_everyones_spend():
    config = _config({"daemon_monthly_limit_usd": 50.0})

    assert crossed_daemon_warning(config, 39.9, 40.0) == 50.0
    assert crossed_daemon_warning(config, 40.0, 45.0) is None
    assert crossed_daemon_warning(_config({"monthly_limit_usd": 50.0}), 39.9, 40.0) is None
