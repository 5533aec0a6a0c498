"""A turn and its usage: the model it runs with under the person's budget, and the record of what it spent."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable

from mindroom.bots.usage.budgets import budget_call, crossed_daemon_warning, crossed_warning, reset_day, usd
from mindroom.bots.usage.cost import turn_cost
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.config.main import Config
from mindroom.config.models import ModelConfig
from mindroom.hooks.context import MessageEnvelope
from mindroom.hooks.transport import ResponseUsage
from mindroom.logging_config import get_logger
from mindroom.matrix.room_account import RoomAccount
from mindroom.state.usage import UsageRecord

__all__ = ["record_turn", "turn_model"]

logger = get_logger(__name__)


def turn_model(
    config: Config, model_name: str, requester: str, ledger: UsageLedger | None
) -> tuple[str, ModelConfig | None, str]:
    """The model a turn runs with (its name and config), or None and the message the turn is answered with."""
    if ledger is not None and config.budgets is not None:
        call = budget_call(
            config,
            requester,
            model_name,
            ledger.month_spend,
            ledger.month_end,
            ledger.cap(requester),
            ledger.month_total,
        )
        if call.refusal is not None:
            ledger.budget_turns["refused"] += 1
            logger.info("turn refused: budget used up", requester=requester, model=model_name)
            return model_name, None, call.refusal
        if call.model_name != model_name:
            ledger.budget_turns["fallback"] += 1
            logger.info("budget reached: fallback model", requester=requester, model=model_name, to=call.model_name)
        model_name = call.model_name
    model = config.models.get(model_name)
    return model_name, model, "" if model is not None else f"No model named {model_name!r} is configured."


def record_turn(
    ledger: UsageLedger | None,
    config: Config,
    agent: str,
    envelope: MessageEnvelope,
    model_name: str,
    usage: ResponseUsage,
    tool_calls: int,
    account: RoomAccount | None = None,
    after_reply: contextlib.AsyncExitStack | None = None,
) -> tuple[float, float] | None:
    """Count one turn's usage for its requester (no I/O); their month's spend before and after, None if not kept.

    The turn whose cost takes the person past 80 % of their limit has `account` warn them in its conversation,
    and the admin room hears it too (in a task of the ledger's: the answer never waits for it). With
    `after_reply` (the turn's stack of what follows its answer), the person's warning starts when the answer was
    delivered, so it never arrives before the answer it is about. Spend only grows
    within a month, so that happens once a month; a restart reads the month's spend back and does not warn again."""
    if ledger is None:
        return None
    model = config.models.get(model_name)
    pricing = model.pricing if model is not None else None
    cost = turn_cost(pricing, usage.input_tokens, usage.output_tokens, usage.cached_tokens)
    record = UsageRecord(
        uuid.uuid4().hex,
        time.time(),
        envelope.requester_id,
        agent,
        envelope.room_id,
        envelope.resolved_thread_id or "",
        model_name,
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        tool_calls,
        cost,
    )
    turn_cost_usd = record.cost_usd or 0.0
    total_before = ledger.month_total() if turn_cost_usd else 0.0
    before, after = ledger.record(record)
    daemon_limit = crossed_daemon_warning(config, total_before, total_before + turn_cost_usd)
    if daemon_limit is not None and ledger.tell_admins is not None:
        ledger.spawn(_warn_admins(config, total_before + turn_cost_usd, daemon_limit, ledger), "budget warning")
    limit = crossed_warning(config, before, after, ledger.cap(envelope.requester_id))
    if limit is not None and account is not None and envelope.requester_id:
        warning = _warn(account, config, envelope, after, limit, ledger.month_end, ledger.tell_admins)
        if after_reply is None:
            ledger.spawn(warning, "budget warning")
        else:
            after_reply.callback(ledger.spawn, warning, "budget warning")
    return before, after


async def _warn_admins(config: Config, spent: float, limit: float, ledger: UsageLedger) -> None:
    fallback = config.budgets.fallback_model if config.budgets is not None else None
    then = f"turns on priced models use {fallback}" if fallback is not None else "turns on priced models are refused"
    logger.info("daemon budget warning", spent_usd=round(spent, 6), limit_usd=limit)
    if ledger.tell_admins is not None:
        await ledger.tell_admins(
            f"⚠️ This month's spend is {spent / limit:.0%} of the daemon's budget ({usd(spent)} of {usd(limit)}). "
            f"At the limit, {then} until {reset_day(ledger.month_end)} (UTC)."
        )


async def _warn(
    account: RoomAccount,
    config: Config,
    envelope: MessageEnvelope,
    spent: float,
    limit: float,
    reset_at: float,
    tell_admins: Callable[[str], Awaitable[object]] | None,
) -> None:
    person = envelope.requester_id
    fallback = config.budgets.fallback_model if config.budgets is not None else None
    then = f"turns on priced models use {fallback}" if fallback is not None else "turns on priced models are refused"
    text = (
        f"⚠️ {person}: you have used {spent / limit:.0%} of your monthly budget ({usd(spent)} of {usd(limit)}). "
        f"At the limit, {then} until {reset_day(reset_at)} (UTC)."
    )
    logger.info("budget warning", requester=person, spent_usd=round(spent, 6), limit_usd=limit)
    await account.send_message(
        envelope.room_id, text, thread_root=envelope.resolved_thread_id, mentions=[person], msgtype="m.notice"
    )
    if tell_admins is not None:
        await tell_admins(
            f"⚠️ {person} has used {spent / limit:.0%} of their monthly budget ({usd(spent)} of {usd(limit)})."
        )
