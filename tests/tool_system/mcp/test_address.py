"""Remote MCP server URLs: the address rules (IPv6 forms that carry an IPv4 address included), and connections
that go to the address that was checked, however the name answers when it is asked again."""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from typing import Any

import pytest

from mindroom.config.mcp import MCPServerConfig
from mindroom.tool_system.mcp.wire import check_remote_url, connect_client
from mindroom.tool_system.spec import ToolError
from tests.tool_system.mcp.loopback import LoopbackServer

NAME = "mcp-pin.test"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[64:ff9b:1::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::]/",
        "http://[::a9fe:a9fe]/",
        "http://[::ffff:100.100.100.200]/",
        "http://[64:ff9b::a9fe:1]/",  # link-local, not the metadata address itself
        "http://[fd00:ec2::254]/",
    ],
)
@pytest.mark.asyncio
async def test_mcp_addresses_metadata_and_link_local_forms_are_never_reached(url: str):
    for allow_private_network in (False, True):
        with pytest.raises(ToolError, match="never reached"):
            await check_remote_url(url, allow_private_network)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::ffff:127.0.0.1]:9/",
        "http://[::ffff:10.0.0.7]/",
        "http://[64:ff9b::c0a8:105]/",  # 192.168.1.5 through NAT64
        "http://[2002:c0a8:105::]/",  # 192.168.1.5 through 6to4
        "http://[::7f00:1]/",
        "http://[64:ff9b:1::808:808]/",  # a local-use NAT64 prefix is the operator's own network
    ],
)
@pytest.mark.asyncio
async def test_mcp_addresses_private_forms_need_allow_private_network(url: str):
    with pytest.raises(ToolError, match="allow_private_network is off"):
        await check_remote_url(url, False)
    await check_remote_url(url, True)


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://[::ffff:8.8.8.8]/", "::ffff:8.8.8.8"),
        ("https://[2001:4860:4860::8888]/mcp", "2001:4860:4860::8888"),
        ("http://[64:ff9b::808:808]/", "64:ff9b::808:808"),  # 8.8.8.8 through NAT64
        ("http://[2002:808:808::]/", "2002:808:808::"),  # 8.8.8.8 through 6to4
        ("http://8.8.8.8:8080/", "8.8.8.8"),
    ],
)
@pytest.mark.asyncio
async def test_mcp_addresses_public_forms_stay_allowed(url: str, address: str):
    checked = await check_remote_url(url, False)

    assert checked.addresses == (address,)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://8.8.8.8/", "http://8.8.8.8:99999/", "http:///mcp"])
@pytest.mark.asyncio
async def test_mcp_addresses_refuse_what_is_not_an_http_url(url: str):
    with pytest.raises(ToolError, match="not an http"):
        await check_remote_url(url, True)


class RebindingName:
    """`socket.getaddrinfo` for one name that answers `first` the first time and `later` every time after."""

    def __init__(self, first: str, later: str) -> None:
        self.first, self.later = first, later
        self.asked = 0
        self._real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name != NAME:
            return self._real(host, port, family, type, proto, flags)
        self.asked += 1
        address = self.first if self.asked == 1 else self.later
        return self._real(address, port, family, type, proto, flags | socket.AI_NUMERICHOST)


class RecordingServer(LoopbackServer):
    """A real HTTP server on 127.0.0.1 that answers every request with 503 and records its Host header."""

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0
        self.hosts: list[str] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            fields = dict(line.lower().partition(":")[::2] for line in head.split("\r\n")[1:] if line)
            self.hosts.append(fields.get("host", "").strip())
            await reader.readexactly(int(fields.get("content-length", "0") or 0))
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _connect(config: MCPServerConfig) -> BaseException:
    """Connect as the daemon does; what went wrong (the servers here never let a connection succeed)."""
    try:
        async with asyncio.timeout(15), AsyncExitStack() as stack:
            await connect_client(config, stack, stdio=None)
    except BaseException as exc:  # the test looks at where the connection went, not at its error
        if isinstance(exc, asyncio.CancelledError):
            raise
        return exc
    pytest.fail("the connection succeeded")


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
@pytest.mark.asyncio
async def test_mcp_addresses_the_connection_goes_to_the_checked_address_with_the_name(
    monkeypatch: pytest.MonkeyPatch, transport: str
):
    # The operator allowed loopback; the name answers 127.0.0.1 for the check, then a metadata address.
    resolver = RebindingName("127.0.0.1", "169.254.169.254")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with RecordingServer() as server:
        url = f"http://{NAME}:{server.port}/{'sse' if transport == 'sse' else 'mcp'}"
        config = MCPServerConfig(transport=transport, url=url, allow_private_network=True, startup_timeout_seconds=3)

        error = await _connect(config)

    assert server.hosts, error
    assert set(server.hosts) == {f"{NAME}:{server.port}"}
    assert resolver.asked == 1


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
@pytest.mark.asyncio
async def test_mcp_addresses_a_name_that_turns_local_after_the_check_is_not_followed(
    monkeypatch: pytest.MonkeyPatch, transport: str
):
    # Public for the check, 127.0.0.1 (where a server listens) when asked again: the connection goes to the
    # public address (which does not answer here) and never to the local server.
    resolver = RebindingName("8.8.8.8", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    async with RecordingServer() as server:
        config = MCPServerConfig(
            transport=transport,
            url=f"http://{NAME}:{server.port}/mcp",
            startup_timeout_seconds=1,
        )

        await _connect(config)

    assert server.connections == 0
    assert resolver.asked == 1
