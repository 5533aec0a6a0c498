"""The `/api` routes' shared dependency: who the caller acts as (`MINDROOM_API_KEY`'s owner), rate-limited.

Everything `/api` returns passes `redact_value` (`redacted`), like every other output of the daemon.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

from fastapi import HTTPException, Request

from mindroom.api.app_context import ApiContext
from mindroom.api.security import COOKIE_NAME, bearer_token, dashboard_principal
from mindroom.daemon.wiring import ApiCapabilities
from mindroom.logging_config import redact_text, redact_value, secrets_generation

__all__ = ["operator_dependency", "redacted", "running_or_503"]

_T = TypeVar("_T")
_HIDDEN = redact_text("password=hidden-value").split("=", 1)[1]
_MAX_DEPTH = 8
_MEMO_SIZE = 20_000


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


class _Memo:
    """Redacted strings and secret-named keys already seen, for the registered secrets of `generation`.

    The dashboard reads the same names, ids and errors every two seconds; each is redacted once.
    """

    def __init__(self) -> None:
        self.generation = -1
        self.texts: dict[str, str] = {}
        self.secret_keys: dict[str, bool] = {}

    def fresh(self) -> _Memo:
        generation = secrets_generation()
        if generation != self.generation or len(self.texts) > _MEMO_SIZE:
            self.generation, self.texts, self.secret_keys = generation, {}, {}
        return self


_memo = _Memo()


def _walk(value: Any, memo: _Memo, depth: int) -> Any:
    if isinstance(value, str):
        found = memo.texts.get(value)
        if found is None:
            found = memo.texts[value] = redact_text(value)
        return found
    if depth > _MAX_DEPTH and isinstance(value, dict | list | tuple):
        return _HIDDEN  # deeper than anything the API builds: replaced whole, as the logs do
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            secret = memo.secret_keys.get(key)
            if secret is None:
                secret = memo.secret_keys[key] = redact_value({key: "x"}).get(key) != "x"
            out[key] = _HIDDEN if secret and item not in (None, "") else _walk(item, memo, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_walk(item, memo, depth + 1) for item in value]
    return value


def redacted(value: _T) -> _T:
    """`value` safe to hand out: every string redacted (`mindroom.logging_config.redact_text`), fields named
    like secrets blanked (as `redact_value` does for the logs)."""
    return cast(_T, _walk(value, _memo.fresh(), 0))


def running_or_503(ctx: ApiContext) -> ApiCapabilities:
    """What the app may use of the running daemon, or HTTP 503 while it starts."""
    running = ctx.daemon.running
    if running is None:
        raise HTTPException(503, "The daemon is not running yet")
    return running
