"""`/api/usage`: what turns spent, summed by person, agent, room, model or day, for a period and filters; and
`/api/budgets`: each person's spend this month against their limit, and the limits of their own people get.

Behind the same keys as the rest of `/api` (the operator's). `group_by` is a comma-separated list of
`requester`, `agent`, `room_id`, `thread_id`, `model`, `day`; the filters match exactly.
"""

import dataclasses
import re
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.bots.usage.budgets import budget_limit
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.logging_config import get_logger
from mindroom.state.usage import UsageQuery, UsageTotals
from mindroom.state.usage_period import period_bounds

__all__ = ["EMPTY", "CapRequest", "usage_router"]

logger = get_logger(__name__)

_PERSON = re.compile(r"@[^:\s]+:[^\s]+")


class CapRequest(BaseModel):
    """`PUT /api/budgets/users/{user_id}`: the person's monthly limit in USD."""

    limit_usd: float = Field(ge=0, allow_inf_nan=False)


EMPTY = UsageTotals((), 0, 0, 0, 0, 0, 0.0, 0)


def usage_router(ctx: ApiContext) -> APIRouter:
    """The usage routes on `ctx`."""
    router = APIRouter(prefix="/api", tags=["usage"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    @router.get("/usage", summary="Usage (turns, tokens, tool calls, cost) per group, for a period and filters")
    async def usage(
        who: operator,
        period: str = "month",
        person: str | None = None,
        agent: str | None = None,
        room: str | None = None,
        model: str | None = None,
        group_by: str = "",
    ) -> dict[str, Any]:
        ledger = running_or_503(ctx).stores.usage
        if ledger is None:
            raise HTTPException(503, "usage is not recorded by this daemon")
        groups = tuple(name.strip() for name in group_by.split(",") if name.strip())
        try:
            since, until = period_bounds(period, time.time())
            query = UsageQuery(since, until, person, agent, room, model, groups)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        rows = await ledger.query(query)
        whole = await ledger.query(UsageQuery(since, until, person, agent, room, model))
        # Only the names are redacted: the sums are numbers (and `*_tokens` would read as secret names).
        return {
            "period": period,
            "since": since,
            "until": until,
            "filters": redacted({"person": person, "agent": agent, "room": room, "model": model}),
            "group_by": list(groups),
            "rows": [{**row.as_dict(groups), **redacted(dict(zip(groups, row.key, strict=True)))} for row in rows],
            "total": (whole[0] if whole else EMPTY).as_dict(()),
        }

    def ledger_or_503() -> UsageLedger:
        found = running_or_503(ctx).stores.usage
        if found is None:
            raise HTTPException(503, "usage is not recorded by this daemon")
        return found

    @router.get("/budgets", summary="Each person's spend this month against their monthly limit")
    async def budgets(who: operator) -> dict[str, Any]:
        ledger = ledger_or_503()
        config = running_or_503(ctx).live.config
        spends = ledger.month_spends()
        own = {cap.requester: cap for cap in ledger.caps()}
        people = []
        for person in sorted(set(spends) | set(own)):
            cap = own.get(person)
            limit = budget_limit(config, cap.limit_usd if cap is not None else None)
            entry: dict[str, Any] = {"requester": person, "spent_usd": round(spends.get(person, 0.0), 6)}
            entry |= {"limit_usd": limit, "own_limit": cap is not None}
            if cap is not None:
                entry |= {"set_by": cap.set_by, "set_at": cap.set_at}
            people.append(entry)
        settings = config.budgets
        return redacted(
            {
                "enabled": settings is not None,
                "monthly_limit_usd": settings.monthly_limit_usd if settings is not None else None,
                "fallback_model": settings.fallback_model if settings is not None else None,
                "resets_at": ledger.month_end,
                "users": people,
            }
        )

    @router.put("/budgets/users/{user_id}", summary="Give one person a monthly limit of their own (USD)")
    async def set_cap(user_id: str, body: CapRequest, who: operator) -> dict[str, Any]:
        if not _PERSON.fullmatch(user_id):
            raise HTTPException(422, f"not a Matrix user id: {user_id!r} (@name:server)")
        cap = await ledger_or_503().set_cap(user_id, body.limit_usd, who)
        logger.info("budget limit set through the API", requester=user_id, limit_usd=body.limit_usd, by=who)
        return redacted(dataclasses.asdict(cap))

    @router.delete("/budgets/users/{user_id}", summary="Put one person back under budgets.monthly_limit_usd")
    async def remove_cap(user_id: str, who: operator) -> dict[str, bool]:
        if not await ledger_or_503().remove_cap(user_id):
            raise HTTPException(404, "this person has no limit of their own")
        logger.info("budget limit removed through the API", requester=user_id, by=who)
        return {"removed": True}

    return router
