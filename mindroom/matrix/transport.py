"""Plain-JSON requests over nio's HTTP session, and translation of transport failures to `MatrixConnectionError`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import nio

from mindroom.matrix.errors import MatrixConnectionError, MatrixRequestError

__all__ = ["JsonReply", "JsonTransport", "guard_transport", "quote_path", "send_room_event"]

_T = TypeVar("_T")

_TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)
_RATE_LIMITED_ATTEMPTS = 6
_RATE_LIMIT_WAIT_CAP_S = 30.0


async def guard_transport(awaitable: Awaitable[_T], action: str) -> _T:
    """Await `awaitable`, turning connection failures and timeouts into `MatrixConnectionError`."""
    try:
        return await awaitable
    except _TRANSPORT_ERRORS as exc:
        msg = f"{action}: {type(exc).__name__}: {exc}".rstrip(": ")
        raise MatrixConnectionError(msg, refused=_refused(exc)) from exc


def _refused(exc: BaseException) -> bool:
    """True when the connection was refused: the homeserver is not listening (down or restarting)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return isinstance(exc.os_error, ConnectionRefusedError)
    return isinstance(exc, ConnectionRefusedError)


def quote_path(segment: str) -> str:
    """Percent-encode one path segment (room ids and aliases contain `!`, `#` and `:`)."""
    return quote(segment, safe="")


@dataclass(frozen=True, slots=True)
class JsonReply:
    """An HTTP status with the parsed JSON body (None when the body was not JSON)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300

    @property
    def errcode(self) -> str | None:
        """The Matrix `errcode` of an error body."""
        value = self.body.get("errcode") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else None

    @property
    def error(self) -> str:
        """The human-readable `error` of an error body."""
        value = self.body.get("error") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else f"HTTP {self.status}"

    @property
    def retry_after_s(self) -> float:
        """The wait a rate-limited reply asks for (`retry_after_ms`), or 1 s when it names none."""
        retry_ms = self.body.get("retry_after_ms") if isinstance(self.body, dict) else None
        if isinstance(retry_ms, bool) or not isinstance(retry_ms, int | float) or retry_ms <= 0:
            return 1.0
        return float(retry_ms) / 1000

    def raise_for_error(self, action: str) -> None:
        """Raise `MatrixRequestError` unless the status is 2xx."""
        if not self.ok:
            raise MatrixRequestError(action, self.errcode, self.error, self.status)


class JsonTransport:
    """Requests whose JSON nio would parse lossily or does not know (sync, admin registration, raw events)."""

    def __init__(self, client: nio.AsyncClient) -> None:
        self._client = client

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        authenticated: bool = True,
        timeout: float | None = None,  # noqa: ASYNC109 - passed to the HTTP layer, which owns it
    ) -> JsonReply:
        """Send one request and parse the JSON answer; connection failures raise `MatrixConnectionError`."""
        url = f"{path}?{urlencode(query)}" if query else path
        headers = {"Content-Type": "application/json"}
        token = self._client.access_token
        if authenticated and token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body)

        async def send() -> tuple[int, bytes]:
            response = await self._client.send(method, url, data, headers, timeout=timeout)
            async with response:
                return int(response.status), await response.read()

        status, raw = await guard_transport(send(), f"{method} {path}")
        try:
            parsed: Any = json.loads(raw) if raw else {}
        except ValueError:
            parsed = None
        return JsonReply(status=status, body=parsed)


async def send_room_event(
    transport: JsonTransport, room_id: str, event_type: str, content: Mapping[str, Any], txn_id: str
) -> str:
    """PUT one room event exactly as given (rate limits waited out); returns its event id.

    Sends go through here rather than nio's `room_send`, which would encrypt on its own terms (and skips
    reactions): whether and how an event is encrypted is decided before this call.
    """
    path = f"/_matrix/client/v3/rooms/{quote_path(room_id)}/send/{quote_path(event_type)}/{quote_path(txn_id)}"
    reply = await transport.request("PUT", path, body=dict(content))
    for _ in range(_RATE_LIMITED_ATTEMPTS - 1):
        if reply.status != 429:
            break
        await asyncio.sleep(min(reply.retry_after_s, _RATE_LIMIT_WAIT_CAP_S))
        reply = await transport.request("PUT", path, body=dict(content))
    reply.raise_for_error("send " + event_type)
    event_id = reply.body.get("event_id") if isinstance(reply.body, dict) else None
    if not isinstance(event_id, str):
        raise MatrixRequestError("send " + event_type, None, "reply has no event_id", reply.status)
    return event_id
