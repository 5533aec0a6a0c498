"""The HTTP client of a remote MCP server: its connections go only to the addresses its URL was checked with.

`address.check_remote_url` resolves the host once and checks every address. The client made here
connects to those addresses and to no other, so a name that answers differently when it is resolved
again (public for the check, then 127.0.0.1 or a metadata address) is never followed. Requests keep the
name: the Host header, TLS SNI and the certificate check are for the URL's host. Proxies from the
environment are not used: a proxy would resolve the name itself, after the check.

Imported when a remote server is first connected (`httpx2` and `httpcore2` come with the `mcp` extra).
Two parts are not public API, each pinned by a contract test and bounded in `pyproject.toml`: the
transport's connection pool (`_pool`, `tests/tool_system/mcp/test_httpx2_contract.py`) and the SDK's
default timeouts (`mcp.shared._httpx_utils`, `tests/tool_system/mcp/test_mcp_contract.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from mindroom.tool_system.mcp.address import CheckedHost

__all__ = ["PinnedBackend", "PinnedTransport", "pinned_http_client"]


class PinnedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's network backend: the checked host to its checked addresses, in order, and nothing else."""

    def __init__(self, checked: CheckedHost) -> None:
        self._checked = checked
        self._host = _name(checked.host)
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """A connection to the first checked address that answers; `ConnectError` for any other host."""
        if _name(host) != self._host:
            raise httpcore2.ConnectError(f"{host} is not {self._checked.host}, the host that was checked")
        failure: Exception = httpcore2.ConnectError(f"{self._checked.host} has no checked address")
        for address in self._checked.addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """Refused: a remote server is reached over TCP."""
        raise httpcore2.ConnectError("a remote MCP server is not reached through a unix socket")

    async def sleep(self, seconds: float) -> None:
        """Wait between connection retries."""
        await self._inner.sleep(seconds)


class PinnedTransport(httpx2.AsyncHTTPTransport):
    """httpx's transport with its connection pool on a `PinnedBackend`."""

    def __init__(self, checked: CheckedHost) -> None:
        ssl_context = httpx2.create_ssl_context()
        super().__init__(verify=ssl_context)
        # httpx builds its pool in `__init__` with no way to pass a network backend; the contract test
        # (`test_httpx2_contract.py`) fails if a newer httpx2 stops sending, entering or closing through `_pool`.
        self._pool = httpcore2.AsyncConnectionPool(ssl_context=ssl_context, network_backend=PinnedBackend(checked))


def pinned_http_client(
    checked: CheckedHost,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The MCP SDK's client (`create_mcp_http_client`'s settings) with its connections pinned to `checked`."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        auth=auth,
        transport=PinnedTransport(checked),
    )


def _name(host: str) -> str:
    """A host as httpcore names it: lower case, ASCII (IDNA), without brackets or a final dot."""
    name = host.lower().rstrip(".").strip("[]")
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name
