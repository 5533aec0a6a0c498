"""`MetricsServer`: `GET /metrics` over plain HTTP (stdlib asyncio; off unless a port is given).

Loopback by default; anywhere else it warns. With a token, only scrapes bearing it are answered. A cap
on open connections keeps slow or idle clients from piling up.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import time
from typing import Any

from mindroom.daemon.metrics import CONTENT_TYPE, MetricsCollector
from mindroom.logging_config import get_logger

__all__ = ["MAX_CONNECTIONS", "MetricsServer"]

logger = get_logger(__name__)

MAX_CONNECTIONS = 16
_REQUEST_TIMEOUT_S = 5.0
_MAX_REQUEST_BYTES = 8192


class MetricsServer:
    """`GET /metrics` on `host:port` (loopback by default); `async with` it, or `start()` then `stop()`."""

    def __init__(
        self,
        collector: MetricsCollector,
        *,
        port: int,
        host: str = "127.0.0.1",
        token: str | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.collector = collector
        self.host = host
        self._port = port
        self._token = token.encode() if token else None
        self._max_connections = max_connections
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    @property
    def port(self) -> int:
        """The bound port (useful when 0 asked for a free one)."""
        if self._server is None or not self._server.sockets:
            return self._port
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """The scrape URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def start(self) -> None:
        """Start listening; warn when anyone on the network could read the metrics."""
        self._server = await asyncio.start_server(self._handle, self.host, self._port)
        logger.info("metrics endpoint listening", url=self.url, token_required=self._token is not None)
        if not _is_loopback(self.host):
            logger.warning(
                "metrics endpoint reachable beyond this machine",
                host=self.host,
                token_required=self._token is not None,
                fix="bind to 127.0.0.1, or set MINDROOM_METRICS_TOKEN and put TLS in front",
            )

    async def stop(self) -> None:
        """Stop listening and end open connections."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> MetricsServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self._max_connections:
            # Too many open at once (slow or idle clients): refuse at once rather than queue without end.
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            async with asyncio.timeout(_REQUEST_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            status, body, content_type = self._respond(head[:_MAX_REQUEST_BYTES])
            method = head.split(b" ", 1)[0]
            header = (
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            writer.write(header if method == b"HEAD" else header + body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _respond(self, head: bytes) -> tuple[str, bytes, str]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) < 2:
            return "400 Bad Request", b"bad request\n", "text/plain"
        method, target = parts[0], parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", b"only GET\n", "text/plain"
        if self._token is not None and not self._authorized(head):
            return "401 Unauthorized", b"bearer token required\n", "text/plain"
        if target == "/metrics":
            started = time.perf_counter()
            text = self.collector.render()
            logger.debug("metrics scraped", ms=round((time.perf_counter() - started) * 1000, 2))
            return "200 OK", text.encode(), CONTENT_TYPE
        if target == "/":
            return "200 OK", b"MindRoom metrics: /metrics\n", "text/plain"
        return "404 Not Found", b"not found\n", "text/plain"

    def _authorized(self, head: bytes) -> bool:
        assert self._token is not None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"authorization":
                scheme, _, presented = value.strip().partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), self._token)
        return False


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
