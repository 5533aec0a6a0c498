"""The operator's routes over people's OAuth connections (the dashboard's Connections view), behind the `/api` keys.

`GET /api/oauth/providers` lists every provider with its state and who is connected to it,
`GET /api/oauth/{provider}/status` answers the same for one provider, and `POST /api/oauth/{provider}/disconnect`
with `{"person": "@alice:example.org"}` revokes that person's tokens at the provider and forgets them, as their
own `!disconnect` does. No answer carries a token: a connection is told by its person, scopes and times.
"""

import asyncio
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.logging_config import get_logger
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.overview import ProviderOverview, provider_overview, providers_overview
from mindroom.oauth.service import OAuthConnections, connections_for

__all__ = ["DisconnectRequest", "connection_router"]

logger = get_logger(__name__)


class DisconnectRequest(BaseModel):
    """`POST /api/oauth/{provider}/disconnect`: whose connection to revoke and forget (a Matrix user id)."""

    person: str


def _answer(overview: ProviderOverview) -> dict[str, Any]:
    """A provider as the API tells it (MindRoom's `provider`, `display_name`, `connected`, `has_client_config`)."""
    connections = [asdict(connection) for connection in overview.connections]
    return {
        "provider": overview.id,
        "display_name": overview.display_name,
        "ready": overview.ready,
        "has_client_config": overview.ready,
        "problem": overview.problem,
        "scopes": list(overview.scopes),
        "revocable": overview.revocable,
        "connected": any(connection["state"] == "connected" for connection in connections),
        "connections": connections,
    }


def connection_router(ctx: ApiContext) -> APIRouter:
    """The operator's connection routes on `ctx`."""
    router = APIRouter(prefix="/api/oauth", tags=["oauth"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    def service() -> OAuthConnections:
        found = connections_for(running_or_503(ctx).paths.storage_root)
        if found is None:
            raise HTTPException(503, "OAuth connections are not available in this daemon")
        return found

    @router.get("/providers", summary="Every OAuth provider with its state and the people connected to it")
    async def providers(who: operator) -> dict[str, Any]:
        try:
            listed = await asyncio.to_thread(providers_overview, service())
        except OAuthError as error:
            raise HTTPException(503, str(error)) from None
        return redacted({"providers": [_answer(overview) for overview in listed]})

    @router.get("/{provider}/status", summary="One OAuth provider's state and the people connected to it")
    async def status(who: operator, provider: str) -> dict[str, Any]:
        try:
            overview = await asyncio.to_thread(provider_overview, service(), provider)
        except OAuthError as error:
            raise HTTPException(404, str(error)) from None
        return redacted(_answer(overview))

    @router.post("/{provider}/disconnect", summary="Revoke a person's tokens at the provider and forget them")
    async def disconnect(who: operator, provider: str, request: DisconnectRequest) -> dict[str, Any]:
        done = await service().revoke_and_forget(request.person, provider)
        if not done.found:
            raise HTTPException(404, f"{request.person} has no {provider} connection")
        logger.info("OAuth connection disconnected by the operator", requester=done.person, provider=provider, by=who)
        return redacted({
            "status": "disconnected", "provider": provider, "person": done.person,
            "revoked": done.revoked, "problem": done.problem,
        })  # fmt: skip

    return router
