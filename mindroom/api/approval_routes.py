"""`/api/approvals`: the tool calls waiting for a person, and deciding them from the dashboard.

A decision goes the way a ✅ or ❌ on the card goes (`ApprovalDesk.decide`): recorded once (a second
decision, or one racing the clock, gets 409), the waiting turn woken, the card edited. It is recorded as
the key's owner (`MINDROOM_OWNER_USER_ID`, else `MINDROOM_USER`).
"""

import dataclasses
import math
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.logging_config import get_logger

__all__ = ["Decision", "approval_router"]

logger = get_logger(__name__)


class Decision(BaseModel):
    """An optional reason for a denial."""

    reason: str | None = None


def approval_router(ctx: ApiContext) -> APIRouter:
    """The approval routes on `ctx`."""
    router = APIRouter(prefix="/api", tags=["approvals"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    def desk() -> ApprovalDesk:
        found = running_or_503(ctx).stores.approvals
        if found is None:
            raise HTTPException(503, "approvals are not available")
        return found

    @router.get("/approvals", summary="Pending approvals, oldest first")
    async def pending(who: operator) -> list[dict[str, Any]]:
        # Every pending approval is "overdue" at the end of time: the store's one query over pending ones.
        records = desk().store.overdue(now=math.inf)
        return redacted([dataclasses.asdict(record) for record in records])

    async def decide(approval_id: str, status: Literal["approved", "denied"], who: str, reason: str | None) -> Any:
        approvals = desk()
        record = approvals.store.get(approval_id)
        if record is None:
            raise HTTPException(404, "No such approval")
        if not record.pending:
            raise HTTPException(409, f"Already {record.status}")
        entity = running_or_503(ctx).directory.entities.get(record.agent)
        if entity is None:
            raise HTTPException(409, f"{record.agent} is not running; its card cannot be updated")
        if not await approvals.decide(entity.client, record, status, who, reason=reason):
            raise HTTPException(409, "Decided meanwhile")
        logger.info("approval decided through the API", approval=approval_id, status=status, by=who)
        current = approvals.store.get(approval_id)
        return redacted(dataclasses.asdict(current)) if current is not None else {}

    @router.post("/approvals/{approval_id}/approve", summary="Allow the tool call")
    async def approve(approval_id: str, who: operator) -> dict[str, Any]:
        result: dict[str, Any] = await decide(approval_id, "approved", who, None)
        return result

    @router.post("/approvals/{approval_id}/deny", summary="Deny the tool call, with an optional reason")
    async def deny(approval_id: str, who: operator, body: Decision | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await decide(approval_id, "denied", who, body.reason if body else None)
        return result

    return router
