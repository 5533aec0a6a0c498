"""Usage in words: a person's month and day, the top spenders, and the sums of a query as plain text."""

from __future__ import annotations

import time
from typing import Any

from mindroom.bots.usage.ledger import UsageLedger
from mindroom.state.usage import UsageQuery, UsageTotals
from mindroom.state.usage_period import period_bounds

__all__ = ["UsageSummaries", "person_report", "top_spenders", "totals_text"]


def totals_text(totals: UsageTotals | None) -> str:
    """One line: turns, tokens in (cached) and out, tool calls, cost (and how many turns had no price)."""
    if totals is None or totals.turns == 0:
        return "no turns"
    text = (
        f"{totals.turns} turn{'s' if totals.turns != 1 else ''}, {totals.input_tokens:,} tokens in"
        f" ({totals.cached_tokens:,} cached), {totals.output_tokens:,} out, {totals.tool_calls} tool calls,"
        f" ${totals.cost_usd:.4f}"
    )
    if totals.unpriced_turns:
        text += f" ({totals.unpriced_turns} on unpriced models, counted in tokens only)"
    return text


async def _one(ledger: UsageLedger, query: UsageQuery) -> UsageTotals | None:
    found = await ledger.query(query)
    return found[0] if found else None


async def person_report(ledger: UsageLedger, person: str, *, own: bool, now: float | None = None) -> str:
    """`person`'s usage this month and today (UTC), as `!usage` answers it."""
    at = time.time() if now is None else now
    month_since, _ = period_bounds("month", at)
    today_since, _ = period_bounds("today", at)
    month = await _one(ledger, UsageQuery(since=month_since, requester=person))
    today = await _one(ledger, UsageQuery(since=today_since, requester=person))
    whose = "Your usage" if own else f"Usage of {person}"
    return f"{whose} this month (UTC): {totals_text(month)}.\nToday: {totals_text(today)}."


async def top_spenders(ledger: UsageLedger, *, limit: int = 10, now: float | None = None) -> str:
    """The people who spent most this month, with their sums (most first)."""
    since, _ = period_bounds("month", time.time() if now is None else now)
    people = await ledger.query(UsageQuery(since=since, group_by=("requester",)))
    if not people:
        return "Nobody has used an agent this month."
    people.sort(key=lambda t: (-t.cost_usd, -(t.input_tokens + t.output_tokens), t.key))
    lines = [f"{n}. {t.key[0]}: {totals_text(t)}" for n, t in enumerate(people[:limit], 1)]
    return "Top spenders this month (UTC):\n" + "\n".join(lines)


class UsageSummaries:
    """The `usage_stats` tool's reports on a ledger (`mindroom.tool_system.builtin.parts.UsageDesk`)."""

    def __init__(self, ledger: UsageLedger) -> None:
        self._ledger = ledger

    async def summary(self, requester: str | None, *, include_daily: bool) -> dict[str, Any]:
        """One person's sums this month and today by agent and model (None: everyone's, by person)."""
        now = time.time()
        groups: tuple[str, ...] = ("agent", "model") if requester is not None else ("requester",)
        found: dict[str, Any] = {"timezone": "UTC"}
        for period in ("month", "today"):
            since, _ = period_bounds(period, now)
            rows = await self._ledger.query(UsageQuery(since=since, requester=requester, group_by=groups))
            whole = await self._ledger.query(UsageQuery(since=since, requester=requester))
            found[period] = {
                "total": whole[0].as_dict(()) if whole else None,
                "by_person" if requester is None else "by_agent_and_model": [row.as_dict(groups) for row in rows],
            }
        if include_daily:
            since, _ = period_bounds("month", now)
            days = await self._ledger.query(UsageQuery(since=since, requester=requester, group_by=("day",)))
            found["daily"] = [row.as_dict(("day",)) for row in days]
        return found
