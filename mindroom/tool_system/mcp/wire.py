"""The MCP SDK's side of a connection: the transports, the tool listing, and results as the model reads them.

The `mcp` package (the `mcp` extra) is imported here only, when a server is first connected.

- stdio: the server started by `stdio` (sandboxed); its stdout lines are JSON-RPC messages in, and
  messages out are written to its stdin, one line each. Its exit ends the connection.
- streamable HTTP and SSE: the SDK's clients, with the configured headers. The URL's host is resolved once
  and each address checked (`address`: public addresses only, unless `allow_private_network` admits
  private and loopback ones; link-local and cloud metadata addresses stay refused, also inside IPv6 forms);
  the HTTP client connects to those addresses only (`http_client`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import mimetypes
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mindroom.config.mcp import MCPServerConfig
from mindroom.tool_system.mcp.address import CheckedHost, check_remote_url
from mindroom.tool_system.mcp.stdio import StdioServerSpec, StdioSession, start_stdio_server
from mindroom.tool_system.spec import OutboundFile, ToolError, ToolOutput

__all__ = ["RemoteTool", "check_remote_url", "connect_client", "list_remote_tools", "result_output", "stdio_streams"]

_MAX_PAGES = 50
_CLIENT_NAME = "mindroom"


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool the server lists: its own name, what it does, and the JSON schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@asynccontextmanager
async def stdio_streams(session: StdioSession, ends: list[Any] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's read and write streams over a started server's stdout and stdin.

    The sending end of the read stream is appended to `ends`: closing it ends the client's reading at
    once, where waiting for the server's stdout to close could wait on a server that never closes it.
    """
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    process = session.process
    assert process.stdout is not None
    assert process.stdin is not None
    stdout, stdin = process.stdout, process.stdin
    read_in, read_out = anyio.create_memory_object_stream[Any](16)
    write_in, write_out = anyio.create_memory_object_stream[Any](16)
    if ends is not None:
        ends.append(read_in)

    async def reader() -> None:
        async with read_in:
            while line := await stdout.readline():
                if not line.strip():
                    continue
                try:
                    message: Any = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line))
                except ValueError as exc:
                    message = exc
                try:
                    await read_in.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def writer() -> None:
        async with write_out:
            async for message in write_out:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(data.encode() + b"\n")
                await stdin.drain()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_out, write_in
        finally:
            group.cancel_scope.cancel()


async def connect_client(
    config: MCPServerConfig,
    stack: AsyncExitStack,
    *,
    stdio: StdioServerSpec | None,
    on_session: Callable[[StdioSession], None] | None = None,
    auth: Any = None,
) -> tuple[Any, Callable[[], Awaitable[Any]]]:
    """An initialized `mcp.Client` for the server (entered on `stack`), and what to await for its end.

    `auth`: an `httpx2.Auth` for a remote server's requests (one person's bearer token, for `auth:` servers).
    """
    from mcp import Client

    exited: Callable[[], Awaitable[Any]]
    if config.transport == "stdio":
        assert stdio is not None
        session = await stack.enter_async_context(start_stdio_server(stdio))
        if on_session is not None:
            on_session(session)
        ends: list[Any] = []
        transport: Any = stdio_streams(session, ends)
        exited = session.process.wait
    else:
        assert config.url is not None
        checked = await check_remote_url(config.url, config.allow_private_network)
        transport = await _remote_transport(config, checked, stack, auth)
        exited = asyncio.Event().wait  # a remote server's end shows as a failed call
    client = await stack.enter_async_context(Client(transport, client_info=_client_info(), cache=None))
    if config.transport == "stdio":
        for end in ends:
            stack.callback(end.close)  # runs before the client's exit, which waits for its reading to end
    return client, exited


def _client_info() -> Any:
    from mcp import Implementation

    return Implementation(name=_CLIENT_NAME, version="1")


async def _remote_transport(config: MCPServerConfig, checked: CheckedHost, stack: AsyncExitStack, auth: Any) -> Any:
    """The SDK's transport for the server, its HTTP clients connecting to the checked addresses only."""
    import httpx2
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    from mindroom.tool_system.mcp.http_client import pinned_http_client

    def client(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return pinned_http_client(checked, headers, timeout, auth)

    assert config.url is not None
    if config.transport == "sse":
        seconds = config.startup_timeout_seconds
        return sse_client(
            config.url, headers=dict(config.headers), timeout=seconds, httpx_client_factory=client, auth=auth
        )
    timeout = httpx2.Timeout(config.startup_timeout_seconds, read=max(300.0, config.call_timeout_seconds))
    # The SDK leaves a client it was given open: the connection's stack closes it after the transport.
    http = await stack.enter_async_context(client(dict(config.headers), timeout, auth))
    return streamable_http_client(config.url, http_client=http)


async def list_remote_tools(client: Any) -> tuple[RemoteTool, ...]:
    """Every tool the server lists (all pages)."""
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(RemoteTool(t.name, t.description or "", dict(t.input_schema or {})) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


def _media(item: Any, index: int) -> OutboundFile | None:
    mime = str(getattr(item, "mime_type", None) or "application/octet-stream")
    try:
        data = base64.b64decode(item.data, validate=False)
    except (ValueError, TypeError):
        return None
    extension = mimetypes.guess_extension(mime) or ".bin"
    return OutboundFile(f"{item.type}-{index}{extension}", data, mime)


def result_output(result: Any) -> str | ToolOutput:
    """A `CallToolResult` as the model's text (and files for the person); `ToolError` for an error result."""
    texts: list[str] = []
    files: list[OutboundFile] = []
    for index, item in enumerate(result.content or (), start=1):
        kind = getattr(item, "type", "")
        if kind == "text":
            texts.append(item.text)
        elif kind in ("image", "audio"):
            found = _media(item, index)
            if found is not None:
                files.append(found)
        elif kind == "resource":
            resource = item.resource
            if getattr(resource, "text", None) is not None:
                texts.append(resource.text)
            else:
                data = base64.b64decode(getattr(resource, "blob", "") or "")
                name = str(resource.uri).rsplit("/", 1)[-1] or f"resource-{index}"
                files.append(OutboundFile(name, data, resource.mime_type or "application/octet-stream"))
        elif kind == "resource_link":
            texts.append(f"{item.name}: {item.uri}")
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(text or "the MCP server reported an error")
    return ToolOutput(text, tuple(files)) if files else text
