"""What keeps a slow, greedy or hostile client from hurting the daemon: a cap on request bodies (and on how
long one may take to arrive), and per-key rate limits.

The body cap is ASGI middleware, so it holds before any route reads the body: a declared length over the
cap is refused at once, and a body that grows past it while streaming in is cut off with 413.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mindroom.api.openai_protocol import error_body

__all__ = ["BodyLimit", "RateLimiter"]

_MAX_TRACKED_KEYS = 10_000


class _BodyTooLargeError(Exception):
    pass


class _BodyTooSlowError(Exception):
    pass


class BodyLimit:
    """ASGI middleware: 413 for a body over `max_bytes`, 408 for one that takes over `timeout_s` per chunk."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, timeout_s: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _refuse(scope, send, 413, "Request body too large")
            return
        received = 0
        started = False
        complete = False

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # the body is in: what is left to receive is the client going away, whenever it does
                return await receive()
            try:
                async with asyncio.timeout(self.timeout_s):
                    message = await receive()
            except TimeoutError:
                raise _BodyTooSlowError from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLargeError
                complete = not message.get("more_body", False)
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except (_BodyTooLargeError, _BodyTooSlowError) as exc:
            if not started:
                too_large = isinstance(exc, _BodyTooLargeError)
                status, text = (413, "Request body too large") if too_large else (408, "Request body too slow")
                await _refuse(scope, send, status, text)


async def _refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    """An error in the shape the path's clients read: OpenAI's under `/v1`, FastAPI's elsewhere."""
    body = error_body(message) if scope["path"].startswith("/v1") else {"detail": message}
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class RateLimiter:
    """A token bucket per key: `per_minute` requests a minute, in bursts of up to `burst`."""

    def __init__(self, per_minute: int, burst: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst if burst is not None else max(1, per_minute // 4))
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def retry_after(self, key: str) -> float | None:
        """Take one request for `key`: None when allowed, else the seconds until one would be."""
        now = self._clock()
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > _MAX_TRACKED_KEYS:  # many keys (addresses) at once: forget the longest idle
            self._buckets.popitem(last=False)
        return None if allowed else (1.0 - tokens) / self.rate
