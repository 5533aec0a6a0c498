"""What the HTTP server (`mindroom/api/server.py`) leans on in uvicorn's `Server`, pinned against the installed one.

`_InLoopServer` overrides `capture_signals` (to keep uvicorn's signal handlers off) and `main_loop` (to tick
at 1 Hz), calls `on_tick`, and reads and sets `started` and `should_exit`. None of these is documented
API: `pyproject.toml` bounds uvicorn to the releases this file passed with, and `.ci/run` runs it against
the newest uvicorn too, so a release that changes one of them is seen before the bound moves.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import uvicorn

from mindroom.api.server import _InLoopServer

pytestmark = pytest.mark.asyncio

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def _app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _config() -> uvicorn.Config:
    return uvicorn.Config(_app, log_config=None, access_log=False, lifespan="off", server_header=False)


def _socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    return sock


async def _until(condition: Callable[[], bool], task: asyncio.Task[None], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if task.done():
            task.result()
            pytest.fail("the server stopped before the condition held")
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.01)


def _handlers() -> dict[int, Any]:
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


async def test_contract_serve_installs_its_signal_handlers_in_capture_signals_only():
    before = _handlers()
    for server_class, installs in ((uvicorn.Server, True), (_InLoopServer, False)):
        server = server_class(_config())
        sock = _socket()
        task = asyncio.create_task(server.serve(sockets=[sock]))
        await _until(lambda s=server: s.started, task)
        during = _handlers()
        server.should_exit = True
        if isinstance(server, _InLoopServer):
            server.exit_requested.set()
        await asyncio.wait_for(task, 10)
        sock.close()
        # uvicorn's own server takes SIGINT and SIGTERM while serving (the near miss that shows where);
        # with `capture_signals` overridden they stay the daemon's.
        assert (during != before) is installs, server_class.__name__
        assert _handlers() == before


async def test_contract_serve_serves_until_main_loop_returns_then_shuts_down():
    class OneRequest(uvicorn.Server):
        served = asyncio.Event()

        async def main_loop(self) -> None:
            await self.served.wait()

    server = OneRequest(_config())
    sock = _socket()
    port = sock.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await _until(lambda: server.started, task)
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://127.0.0.1:{port}/")
    assert (response.status_code, response.text) == (200, "ok")
    # The Date header comes from `on_tick` alone: a main loop that never ticks serves without one.
    assert "server" not in response.headers and "date" not in response.headers

    server.served.set()  # `should_exit` is never set: main_loop returning is what ends serving
    await asyncio.wait_for(task, 10)
    sock.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_contract_on_tick_refreshes_the_date_header_on_multiples_of_ten_and_answers_should_exit():
    config = _config()
    config.load()
    server = uvicorn.Server(config)

    assert await server.on_tick(3) is False
    assert server.server_state.default_headers == []  # not a multiple of ten: nothing refreshed
    assert await server.on_tick(10) is False
    [(name, value)] = server.server_state.default_headers
    assert name == b"date" and value.endswith(b" GMT")

    server.should_exit = True
    assert await server.on_tick(11) is True


async def test_contract_the_in_loop_server_ticks_and_stops_when_asked():
    server = _InLoopServer(_config())
    sock = _socket()
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await _until(lambda: server.started, task)
    await _until(lambda: bool(server.server_state.default_headers), task)  # its first tick set the header
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://127.0.0.1:{sock.getsockname()[1]}/")
    assert "date" in response.headers

    server.should_exit = True
    server.exit_requested.set()
    await asyncio.wait_for(task, 10)
    sock.close()
