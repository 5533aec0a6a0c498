"""One MCP server kept connected: a supervisor task connects, lists its tools, notices a crash and reconnects.

The supervisor owns the connection (`mcp.Client` over the sandboxed stdio transport, streamable HTTP or SSE):
it connects within `startup_timeout_seconds`, lists the tools, and waits until the server exits, a call
finds the connection broken or timed out (`auto_reconnect`), or the server is stopped. After a crash of a
server that was running it reconnects at once; a server that fails to start is retried after 5 s,
doubling up to 60 s. A call never waits for a connection: while the server is not ready its tools answer
that it is unavailable, and why. The last tools it listed stay known across restarts, so an agent keeps
them (answering "unavailable") while the server is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

from mindroom.backoff import Backoff
from mindroom.config.mcp import MCPServerConfig
from mindroom.logging_config import get_logger, redact_text
from mindroom.tool_system.mcp.wire import RemoteTool, list_remote_tools, result_output
from mindroom.tool_system.spec import ToolError

__all__ = ["MCP_RETRY", "MCPConnection", "ServerState", "ServerStatus"]

logger = get_logger(__name__)

ServerState = Literal["starting", "ready", "failed", "stopped"]
_REASON_CHARS = 500
MCP_RETRY = Backoff(first_s=5.0, max_s=60.0)
"""The wait before the next attempt to start a server that failed to start: 5 s, doubling up to 60 s."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """How one server is doing, for `mindroom doctor`, the admin room and the model's error text."""

    server_id: str
    state: ServerState
    reason: str = ""
    tools: int = 0
    restarts: int = 0
    retry_at: float | None = None


class MCPConnection:
    """The daemon's connection to one configured MCP server, kept up by its supervisor task."""

    def __init__(
        self,
        server_id: str,
        config: MCPServerConfig,
        transport: Callable[[AsyncExitStack], Awaitable[Any]],
        *,
        retry: Backoff = MCP_RETRY,
        on_change: Callable[[MCPConnection], None] | None = None,
        diagnostics: Callable[[], str] | None = None,
    ) -> None:
        self.server_id = server_id
        self.config = config
        self._transport = transport
        self._retry = retry
        self._on_change = on_change
        self._diagnostics = diagnostics
        self._client: Any = None
        self._tools: tuple[RemoteTool, ...] = ()
        self._state: ServerState = "starting"
        self._reason = ""
        self._restarts = 0
        self._retry_at: float | None = None
        self._broken = asyncio.Event()
        self._stopping = asyncio.Event()
        self._calls = asyncio.Semaphore(config.max_concurrent_calls)
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()

    @property
    def tools(self) -> tuple[RemoteTool, ...]:
        """The tools the server listed last (kept while it is down)."""
        return self._tools

    def status(self) -> ServerStatus:
        """The server's state now."""
        return ServerStatus(self.server_id, self._state, self._reason, len(self._tools), self._restarts, self._retry_at)

    def start(self) -> None:
        """Start the supervisor (once)."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.server_id}")

    async def close(self) -> None:
        """Stop the supervisor and the server (and everything a stdio server started)."""
        self._stopping.set()
        self._broken.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        self._set("stopped", "")

    async def settled(self, timeout_s: float) -> ServerState:
        """Its state once it is no longer starting (ready, failed or stopped), waiting at most `timeout_s`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._settled.wait(), timeout_s)
        return self._state

    def _set(self, state: ServerState, reason: str, retry_at: float | None = None) -> None:
        changed = (state, reason) != (self._state, self._reason)
        self._state, self._reason, self._retry_at = state, reason[:_REASON_CHARS], retry_at
        if state == "starting":
            self._settled.clear()
        else:
            self._settled.set()
        if changed and self._on_change is not None:
            self._on_change(self)

    async def _attempt(self, ready: asyncio.Event) -> bool:
        """One connection, from start to end (entered and left in this task); True once it was ready."""
        broken = self._broken = asyncio.Event()  # this connection's own: a late call cannot break the next one
        async with AsyncExitStack() as stack:
            client, exited = await self._transport(stack)
            self._tools = await list_remote_tools(client)
            self._client = client
            ready.set()
            try:
                await _first(broken.wait(), self._stopping.wait(), exited())
            finally:
                self._client = None
        return True

    async def _connect_once(self) -> bool:
        """Run one connection until it ends; raises why it could not start. True when it had been ready."""
        ready = asyncio.Event()
        attempt = asyncio.create_task(self._attempt(ready), name=f"mcp-{self.server_id}-connection")
        waiter = asyncio.create_task(ready.wait())
        try:
            await asyncio.wait(
                {attempt, waiter}, timeout=self.config.startup_timeout_seconds, return_when="FIRST_COMPLETED"
            )
            if not ready.is_set():
                if not attempt.done():
                    attempt.cancel()
                    await asyncio.gather(attempt, return_exceptions=True)
                    seconds = self.config.startup_timeout_seconds
                    raise ToolError(f"it did not start and list its tools within {seconds:g} s")
                attempt.result()  # raises what went wrong
            self._set("ready", "")
            logger.info("mcp server ready", server=self.server_id, tools=len(self._tools))
            return await attempt
        finally:
            waiter.cancel()
            if not attempt.done():
                attempt.cancel()
            await asyncio.gather(attempt, waiter, return_exceptions=True)

    async def _supervise(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            was_ready = False
            self._set("starting", self._reason)
            try:
                was_ready = await self._connect_once()
                if not self._stopping.is_set():
                    self._set("failed", self._with_diagnostics(self._reason or "the server exited"))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server, its package or the network: reported, then retried
                self._set("failed", self._with_diagnostics(_describe(exc)))
            if self._stopping.is_set():
                return
            logger.warning("mcp server is unavailable", server=self.server_id, reason=self._reason)
            if was_ready and not self.config.auto_reconnect:
                return  # as configured: no reconnection after a drop
            failures = 0 if was_ready else failures + 1
            delay = 0.0 if was_ready else self._retry.delay(failures)
            self._restarts += 1
            self._set("failed", self._reason, time.time() + delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)

    def _with_diagnostics(self, reason: str) -> str:
        tail = self._diagnostics() if self._diagnostics is not None else ""
        if not tail:
            return reason
        return f"{reason} (it said: {redact_text(tail[-300:])})"

    def _mark_broken(self, reason: str) -> None:
        if self._client is not None and self.config.auto_reconnect:
            self._reason = reason
            self._broken.set()

    def unavailable_text(self) -> str:
        """Why its tools cannot run now, as the model reads it."""
        status = self.status()
        when = ""
        if status.retry_at is not None:
            when = f"; it is restarted in {max(0.0, status.retry_at - time.time()):.0f} s"
        elif status.state == "starting":
            when = "; it is starting"
        reason = f": {status.reason}" if status.reason else ""
        return f"MCP server {self.server_id!r} is unavailable{reason}{when}"

    async def call(self, remote_name: str, arguments: Mapping[str, Any], timeout_s: float) -> Any:
        """Call one of the server's tools; `ToolError` when it is unavailable, fails or runs past `timeout_s`."""
        client = self._client
        if client is None or self._state != "ready":
            raise ToolError(self.unavailable_text())
        try:
            async with asyncio.timeout(timeout_s):
                async with self._calls:
                    result = await client.call_tool(remote_name, dict(arguments))
        except TimeoutError:
            self._mark_broken(f"a call of {remote_name} ran past {timeout_s:g} s")
            raise ToolError(f"MCP server {self.server_id!r} did not answer within {timeout_s:g} s") from None
        except Exception as exc:  # the connection or the server's protocol error; the call is not replayed
            if _connection_lost(exc):
                self._mark_broken(f"the connection was lost: {_describe(exc)}")
                raise ToolError(self.unavailable_text()) from None
            raise ToolError(f"MCP server {self.server_id!r}: {_describe(exc)}") from None
        return result_output(result)


async def _first(*waits: Awaitable[Any]) -> None:
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _connection_lost(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | ConnectionError):
        return True
    code = getattr(getattr(exc, "error", None), "code", getattr(exc, "code", None))
    from mcp_types import CONNECTION_CLOSED

    return code == CONNECTION_CLOSED


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return redact_text(str(exc))
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc) or type(exc).__name__
    return redact_text(f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text)
