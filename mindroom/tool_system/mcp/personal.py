"""An MCP server with `auth`: one session per person, opened with that person's own token when they first call.

Nothing connects at start: a server that wants a token is never called without one. A person's session
opens on their first call (after `token_for` found their connection) and sends their bearer token with each
request, asked of the connections service each time, so a refreshed token is used as soon as it exists.
A session unused for `IDLE_S` is closed at the next call to the server, a failed one is closed and opened
again on the next call, and `!disconnect` closes the person's session at once. The tool list is the one the
last opened session listed (until then only the bridge functions `<prefix>_connection_status`, `_list_tools`
and `_call_tool` exist); it is the same for everyone, and a call still runs with the caller's own session.

Imported with the first server that has `auth` (it loads the MCP SDK's HTTP client).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import httpx2

from mindroom.backoff import Backoff
from mindroom.config.mcp import MCPServerConfig
from mindroom.logging_config import get_logger
from mindroom.tool_system.mcp.connection import MCPConnection, ServerStatus
from mindroom.tool_system.mcp.wire import RemoteTool, connect_client
from mindroom.tool_system.spec import ToolError

__all__ = ["IDLE_S", "PersonBearer", "PersonalSessions"]

logger = get_logger(__name__)

IDLE_S = 600.0
"""A person's session unused this long is closed (at the server's next call)."""


class PersonBearer(httpx2.Auth):
    """A request's `Authorization: Bearer` from one person's connection, fetched for each request."""

    def __init__(self, token: Callable[[], Awaitable[str]]) -> None:
        self._token = token

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Add the person's current access token."""
        request.headers["Authorization"] = f"Bearer {await self._token()}"
        yield request


@dataclass(slots=True)
class _Session:
    connection: MCPConnection
    used_at: float


class PersonalSessions:
    """The people's sessions to one MCP server with `auth` (owner of their supervisor tasks)."""

    def __init__(
        self,
        server_id: str,
        config: MCPServerConfig,
        provider_id: str,
        token: Callable[[str], Awaitable[str]],
        *,
        retry: Backoff,
        on_tools: Callable[[], None],
        idle_s: float = IDLE_S,
    ) -> None:
        """`token(person)`: the person's fresh access token; `on_tools`: told when the tool list changed."""
        self.server_id = server_id
        self.config = config
        self.provider_id = provider_id
        self._token = token
        self._retry = retry
        self._on_tools = on_tools
        self.idle_s = idle_s
        self._sessions: dict[str, _Session] = {}
        self._tools: tuple[RemoteTool, ...] = ()
        self._lock = asyncio.Lock()

    @property
    def tools(self) -> tuple[RemoteTool, ...]:
        """The tools the last opened session listed (none before anyone connected)."""
        return self._tools

    def people(self) -> list[str]:
        """Who has a session open now."""
        return sorted(self._sessions)

    def status(self) -> ServerStatus:
        """The server as `mindroom doctor` and the admin room see it: ready, each person on their own session."""
        reason = f"each person connects their own account ({len(self._sessions)} session(s) open)"
        return ServerStatus(self.server_id, "ready", reason, len(self._tools))

    def _changed(self, connection: MCPConnection) -> None:
        if connection.status().state == "ready" and connection.tools != self._tools:
            self._tools = connection.tools
            self._on_tools()

    def _open(self, person: str) -> MCPConnection:
        async def bearer() -> str:
            return await self._token(person)

        auth = PersonBearer(bearer)

        async def transport(stack: AsyncExitStack) -> Any:
            return await connect_client(self.config, stack, stdio=None, auth=auth)

        connection = MCPConnection(self.server_id, self.config, transport, retry=self._retry, on_change=self._changed)
        connection.start()
        logger.info("mcp session opened", server=self.server_id, requester=person)
        return connection

    async def _sweep(self, now: float) -> None:
        stale = [
            person
            for person, session in self._sessions.items()
            if now - session.used_at > self.idle_s or session.connection.status().state in ("failed", "stopped")
        ]
        for person in stale:
            await self.close_person(person)

    async def session(self, person: str) -> MCPConnection:
        """The person's ready session, opened now if they have none; `ToolError` when it cannot open."""
        async with self._lock:
            now = time.monotonic()
            await self._sweep(now)
            found = self._sessions.get(person)
            if found is None:
                found = self._sessions[person] = _Session(self._open(person), now)
            found.used_at = now
        state = await found.connection.settled(self.config.startup_timeout_seconds)
        if state != "ready":
            text = found.connection.unavailable_text()
            await self.close_person(person)
            raise ToolError(text)
        return found.connection

    async def call(self, person: str, remote_name: str, arguments: Mapping[str, Any], timeout_s: float) -> Any:
        """Call a tool of the server over the person's own session."""
        connection = await self.session(person)
        return await connection.call(remote_name, arguments, timeout_s)

    async def close_person(self, person: str) -> bool:
        """Close the person's session (after `!disconnect`, or idle); False when they had none."""
        session = self._sessions.pop(person, None)
        if session is None:
            return False
        await session.connection.close()
        logger.info("mcp session closed", server=self.server_id, requester=person)
        return True

    async def close(self) -> None:
        """Close every person's session."""
        for person in list(self._sessions):
            await self.close_person(person)
