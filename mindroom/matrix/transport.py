"""Plain-JSON requests over nio's HTTP session, and translation of transport failures to `MatrixConnectionError`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import nio

from mindroom.matrix.errors import MatrixConnectionError, MatrixRequestError

__all__ = ["JsonReply", "JsonTransport", "guard_transport", "quote_path"]

_T = TypeVar("_T")

_TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)


async def guard_transport(awaitable: Awaitable[_T], action: str) -> _T:
    """Await `awaitable`, turning connection failures and timeouts into `MatrixConnectionError`."""
    try:
        return await awaitable
    except _TRANSPORT_ERRORS as exc:
        msg = f"{action}: {type(exc).__name__}: {exc}".rstrip(": ")
        raise MatrixConnectionError(msg) from exc


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
