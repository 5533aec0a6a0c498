"""`HomeserverLink`: what the appservice itself asks the homeserver, with its `as_token` over one HTTP session.

It pings the homeserver (which then pings the listener, and sends at once what it kept for a service it had
counted as down), asks whether the homeserver is there (`/_matrix/client/versions`, which needs no token), and
reads a room's latest events as one of the bots: the service may act as any account of its namespace.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

from mindroom.logging_config import get_logger
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.matrix.transport import JsonReply, guard_transport, quote_path

__all__ = ["HomeserverLink"]

logger = get_logger(__name__)

_TIMEOUT_S = 30.0
_UNSUPPORTED = frozenset({"M_UNRECOGNIZED", "M_NOT_FOUND"})


class HomeserverLink:
    """The appservice's requests to the homeserver; `close()` ends its HTTP session."""

    def __init__(self, homeserver_url: str, service_id: str, as_token: str) -> None:
        self._url = homeserver_url.rstrip("/")
        self._service_id = service_id
        self._as_token = as_token
        self._session: aiohttp.ClientSession | None = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        authenticated: bool = True,
    ) -> JsonReply:
        """One request; connection failures and timeouts raise `MatrixConnectionError`."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_TIMEOUT_S))
        headers = {"Authorization": f"Bearer {self._as_token}"} if authenticated else {}
        session = self._session

        async def send() -> tuple[int, bytes]:
            async with session.request(method, self._url + path, params=query, json=body, headers=headers) as reply:
                return reply.status, await reply.read()

        status, raw = await guard_transport(send(), f"{method} {path}")
        try:
            parsed: Any = json.loads(raw) if raw else {}
        except ValueError:
            parsed = None
        return JsonReply(status=status, body=parsed)

    async def ping(self) -> bool:
        """Ask the homeserver to ping the listener; True when it got through (or the homeserver has no ping: the
        first transaction will tell)."""
        path = f"/_matrix/client/v1/appservice/{quote(self._service_id, safe='')}/ping"
        try:
            reply = await self.request("POST", path, body={"transaction_id": uuid.uuid4().hex})
        except MatrixConnectionError as exc:
            logger.warning("appservice ping failed", appservice=self._service_id, error=str(exc))
            return False
        if reply.ok:
            return True
        if reply.status in (404, 405) and (reply.errcode in _UNSUPPORTED or reply.errcode is None):
            logger.info("homeserver has no appservice ping; not pinging", appservice=self._service_id)
            return True
        logger.warning(
            "appservice ping refused", appservice=self._service_id, status=reply.status, errcode=reply.errcode
        )
        return False

    async def probe(self) -> None:
        """Return when the homeserver answers its versions; raise `MatrixConnectionError` when it does not."""
        reply = await self.request("GET", "/_matrix/client/versions", authenticated=False)
        if not reply.ok:
            msg = f"GET /_matrix/client/versions: HTTP {reply.status}"
            raise MatrixConnectionError(msg)

    async def latest_events(self, room_id: str, user_id: str, limit: int) -> list[dict[str, Any]]:
        """The room's newest `limit` events as `user_id` sees them, newest first (none when it may not read them)."""
        path = f"/_matrix/client/v3/rooms/{quote_path(room_id)}/messages"
        query = {"dir": "b", "limit": str(limit), "user_id": user_id}
        reply = await self.request("GET", path, query=query)
        if not reply.ok:
            logger.info("room not read for the catch-up", room_id=room_id, status=reply.status, errcode=reply.errcode)
            return []
        chunk = reply.body.get("chunk") if isinstance(reply.body, dict) else None
        return [event for event in chunk if isinstance(event, dict)] if isinstance(chunk, list) else []

    async def close(self) -> None:
        """Close the HTTP session (a later request opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
