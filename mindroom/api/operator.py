"""The `/api` routes' shared dependency: who the caller acts as (`MINDROOM_API_KEY`'s owner), rate-limited.

Everything `/api` returns passes `redact_value` (`redacted`), like every other output of the daemon.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar, cast

from fastapi import HTTPException, Request

from mindroom.api.context import ApiContext
from mindroom.api.security import COOKIE_NAME, bearer_token, dashboard_principal
from mindroom.daemon.wiring import RunningDaemon
from mindroom.logging_config import redact_value

__all__ = ["operator_dependency", "redacted", "running_or_503"]

_T = TypeVar("_T")


def operator_dependency(ctx: ApiContext, *, metrics: bool = False) -> Callable[[Request], str]:
    """A FastAPI dependency: the caller's identity for `/api` (or `/metrics`), or 401/403/429."""

    def operator(request: Request) -> str:
        who = dashboard_principal(request, ctx.settings, metrics=metrics)
        credential = bearer_token(request) or request.cookies.get(COOKIE_NAME)
        if credential:
            key = hashlib.sha256(credential.encode()).hexdigest()
        else:
            key = request.client.host if request.client is not None else "local"
        wait = ctx.api_limiter.retry_after(key)
        if wait is not None:
            raise HTTPException(429, "Rate limit reached", headers={"Retry-After": str(int(wait) + 1)})
        return who

    return operator


def redacted(value: _T) -> _T:
    """`value` safe to hand out: secrets in its strings replaced (`mindroom.logging_config.redact_value`)."""
    return cast(_T, redact_value(value))


def running_or_503(ctx: ApiContext) -> RunningDaemon:
    """The running daemon, or HTTP 503 while it starts."""
    running = ctx.daemon.running
    if running is None:
        raise HTTPException(503, "The daemon is not running yet")
    return running
