"""`ApiServer`: the HTTP app served by uvicorn as a task of the daemon's own event loop.

The socket is bound before the task starts, so a port in use fails `start()` at once (and port 0 picks
a free one). uvicorn's own signal handling stays off: the daemon's handlers decide when to stop. On stop
the `/v1` turns are cancelled first, so open streams end, then uvicorn closes its connections.
Connections are capped (`limit_concurrency`: 503 beyond), headers bounded, idle keep-alives closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import uvicorn
from fastapi import FastAPI

from mindroom.api.app_context import ApiContext
from mindroom.logging_config import get_logger

__all__ = ["MAX_CONNECTIONS", "ApiServer", "finish_turns"]

logger = get_logger(__name__)

MAX_CONNECTIONS = 128
_MAX_HEADER_BYTES = 64 * 1024
_STOP_GRACE_S = 3


class _InLoopServer(uvicorn.Server):
    """uvicorn without its signal handlers (the daemon owns SIGTERM and SIGINT), ticking once a second.

    It overrides and calls parts of `uvicorn.Server` that are not documented API (`capture_signals`,
    `main_loop`, `on_tick`): `tests/api/test_uvicorn_contract.py` pins them, and `pyproject.toml` bounds
    uvicorn to the releases it passed with.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.exit_requested = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def main_loop(self) -> None:
        """uvicorn's housekeeping (the `Date` header, refreshed each second) at 1 Hz instead of its 10, so an
        idle server wakes the daemon's loop as rarely as it can; a stop wakes it at once."""
        counter = 0
        while not self.should_exit:
            counter = (counter + 10) % 864_000  # `on_tick` refreshes the header on multiples of ten
            if await self.on_tick(counter):
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exit_requested.wait(), 1.0)


async def finish_turns(ctx: ApiContext, grace_s: float) -> None:
    """Wait up to `grace_s` for the `/v1` turns under way, then cancel those still running."""
    running = ctx.turns.running
    if running:
        await asyncio.wait(running, timeout=grace_s)
    await ctx.turns.cancel_all()


class ApiServer:
    """The HTTP app on `ctx.settings.host:port`: `async with` it, or `start()` then `stop()`."""

    def __init__(self, ctx: ApiContext, app: FastAPI) -> None:
        self.ctx = ctx
        self.app = app
        self._server: _InLoopServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        """The bound port (the one picked when 0 was asked for)."""
        if self._socket is None:
            return self.ctx.settings.port
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """The dashboard's address."""
        settings = self.ctx.settings
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "") else settings.host  # a wildcard is not an address
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def _bind(self) -> socket.socket:
        host = self.ctx.settings.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, self.ctx.settings.port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    async def start(self) -> None:
        """Check the bind is safe (`BindRefusedError`), bind, and serve until `stop()`."""
        self.ctx.settings.check_bind()
        self._socket = self._bind()
        config = uvicorn.Config(
            self.app,
            log_config=None,
            access_log=False,
            lifespan="off",
            server_header=False,
            limit_concurrency=MAX_CONNECTIONS,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=_STOP_GRACE_S,
            h11_max_incomplete_event_size=_MAX_HEADER_BYTES,
        )
        server = self._server = _InLoopServer(config)
        self._task = asyncio.create_task(server.serve(sockets=[self._socket]), name="api-server")
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what kept it from starting
                msg = "the API server stopped while starting"
                raise RuntimeError(msg)
            await asyncio.sleep(0.01)
        logger.info("api listening", url=self.url, host=self.ctx.settings.host, port=self.port)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Let the `/v1` turns finish (storing what they answered) for up to `grace_s`, cancel the rest, then
        stop serving (open connections get a short grace)."""
        await finish_turns(self.ctx, grace_s)
        server, task, self._server, self._task = self._server, self._task, None, None
        if server is None or task is None:
            return
        server.should_exit = True
        server.exit_requested.set()
        try:
            async with asyncio.timeout(_STOP_GRACE_S + 5):
                await task
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._socket is not None:
            self._socket.close()

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
