"""What the pinned MCP client (`mindroom/tool_system/mcp/http_client.py`) leans on in httpx2, pinned.

`PinnedTransport` replaces the private connection pool (`_pool`) that `httpx2.AsyncHTTPTransport` builds
in its constructor, since the constructor takes no network backend. That holds only while the transport
sends, enters, leaves and closes through `_pool`; and the client keeps away from the environment's proxies
only while httpx2 mounts none when a transport is given. `pyproject.toml` bounds httpx2 to the releases
this file passed with, and `.ci/run` runs it against the newest httpx2 too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
import pytest

from mindroom.tool_system.mcp.address import CheckedHost
from mindroom.tool_system.mcp.http_client import pinned_http_client
from tests.tool_system.mcp.loopback import LoopbackServer

pytestmark = pytest.mark.asyncio

NAME = "mcp-contract.test"  # resolves nowhere: only the pinned backend can reach it


class Recording(httpcore2.AsyncNetworkBackend):
    """httpcore's default backend, recording each connection it opens."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, int]] = []
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.opened.append((host, port))
        return await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class Server(LoopbackServer):
    """A real HTTP server on 127.0.0.1 that answers 204 and records each request line and Host header."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                fields = dict(line.lower().partition(":")[::2] for line in head[1:] if line)
                self.seen.append((head[0], fields.get("host", "").strip()))
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_contract_the_transport_builds_its_pool_in_pool():
    transport = httpx2.AsyncHTTPTransport(verify=httpx2.create_ssl_context())
    try:
        assert isinstance(transport._pool, httpcore2.AsyncConnectionPool)
    finally:
        await transport.aclose()


async def test_contract_the_transport_sends_enters_and_closes_through_pool():
    transport = httpx2.AsyncHTTPTransport()
    backend = Recording()
    pool = transport._pool = httpcore2.AsyncConnectionPool(network_backend=backend)
    async with Server() as server:
        async with httpx2.AsyncClient(transport=transport) as client:
            first = await client.get(f"http://127.0.0.1:{server.port}/one")
            second = await client.get(f"http://127.0.0.1:{server.port}/two")
            assert (first.status_code, second.status_code) == (204, 204)
            assert len(pool.connections) == 1  # the replaced pool holds the connection, kept alive
        # Leaving the client left the transport, which closed the replaced pool.
        assert pool.connections == []

    assert backend.opened == [("127.0.0.1", server.port)]
    assert [line for line, _ in server.seen] == ["GET /one HTTP/1.1", "GET /two HTTP/1.1"]

    other = httpx2.AsyncHTTPTransport()
    replaced = other._pool = httpcore2.AsyncConnectionPool(network_backend=Recording())
    async with Server() as server:
        await httpx2.AsyncClient(transport=other).get(f"http://127.0.0.1:{server.port}/")
        assert len(replaced.connections) == 1
        await other.aclose()
    assert replaced.connections == []


async def test_contract_a_client_given_a_transport_uses_no_proxy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
):
    async with Server() as proxy, Server() as server:
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        # The near miss: a plain client takes the proxy from the environment.
        async with httpx2.AsyncClient() as plain:
            await plain.get(f"http://{NAME}:{server.port}/plain")
        assert [line for line, _ in proxy.seen] == [f"GET http://{NAME}:{server.port}/plain HTTP/1.1"]

        async with pinned_http_client(CheckedHost(NAME, ("127.0.0.1",))) as pinned:
            response = await pinned.get(f"http://{NAME}:{server.port}/pinned")

    assert response.status_code == 204
    assert len(proxy.seen) == 1
    assert server.seen == [("GET /pinned HTTP/1.1", f"{NAME}:{server.port}")]
