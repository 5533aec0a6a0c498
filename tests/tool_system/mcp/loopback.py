"""A real asyncio server on 127.0.0.1 for a test's `async with`: the subclass says how it answers (`_serve`)."""

from __future__ import annotations

import asyncio
from typing import Self


class LoopbackServer:
    """Listens on 127.0.0.1 at a port the system chooses (`port`) from `async with` until its end."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError
