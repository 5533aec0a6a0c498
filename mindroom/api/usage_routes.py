"""`/api/usage`: what turns spent, summed by person, agent, room, model or day, for a period and filters.

Behind the same keys as the rest of `/api` (the operator's). `group_by` is a comma-separated list of
`requester`, `agent`, `room_id`, `thread_id`, `model`, `day`; the filters match exactly.
"""

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.state.usage import UsageQuery, UsageTotals
from mindroom.state.usage_period import period_bounds

__all__ = ["EMPTY", "usage_router"]

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

    return router
