"""Fixtures for the Matrix layer tests: bots on the session's real Synapse and owned sync tasks."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio

from mindroom.matrix import MatrixBotClient, MatrixEvent
from mindroom.testing.homeserver import TestHomeserver, unique_localpart

BotFactory = Callable[..., Awaitable[MatrixBotClient]]


class SyncRecorder:
    """Collects what one client's `run_sync` delivers."""

    def __init__(self, client: MatrixBotClient, accept_invites: bool | Callable[[str, str], bool]) -> None:
        self.client = client
        self.events: list[MatrixEvent] = []
        self.invites: list[tuple[str, str]] = []
        self._accept = accept_invites
        self._changed = asyncio.Condition()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the client's sync in a task and wait for its first sync."""
        self.task = asyncio.create_task(self.client.run_sync(self.handler, on_invite=self.on_invite))
        first_sync = asyncio.create_task(self.client.first_sync_done())
        done, _ = await asyncio.wait({self.task, first_sync}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        first_sync.cancel()
        if self.task in done:
            self.task.result()
        if first_sync not in done:
            raise TimeoutError("no first sync within 15 s")

    async def stop(self) -> None:
        """Cancel the sync task and wait for it to end."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def handler(self, event: MatrixEvent) -> None:
        self.events.append(event)
        async with self._changed:
            self._changed.notify_all()

    async def on_invite(self, room_id: str, inviter: str) -> bool:
        self.invites.append((room_id, inviter))
        async with self._changed:
            self._changed.notify_all()
        return self._accept(room_id, inviter) if callable(self._accept) else self._accept

    async def wait_for(self, predicate: Callable[[MatrixEvent], bool], seconds: float = 15.0) -> MatrixEvent:
        """The first delivered event matching `predicate`, waiting for it if needed."""

        def found() -> MatrixEvent | None:
            return next((event for event in self.events if predicate(event)), None)

        async with asyncio.timeout(seconds), self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        event = found()
        assert event is not None
        return event

    async def wait_for_body(self, body: str, seconds: float = 15.0) -> MatrixEvent:
        return await self.wait_for(lambda event: event.content.get("body") == body, seconds)

    async def wait_for_invites(self, count: int, seconds: float = 15.0) -> None:
        async with asyncio.timeout(seconds), self._changed:
            await self._changed.wait_for(lambda: len(self.invites) >= count)


SyncStarter = Callable[..., Awaitable[SyncRecorder]]


@pytest_asyncio.fixture
async def make_bot(matrix_homeserver: TestHomeserver, tmp_path: Path) -> AsyncIterator[BotFactory]:
    """`await make_bot(name=None, storage_root=None, login=True, **client_kwargs)` -> a client closed at teardown."""
    clients: list[MatrixBotClient] = []

    async def factory(
        name: str | None = None, *, storage_root: Path | None = None, login: bool = True, **kwargs: Any
    ) -> MatrixBotClient:
        kwargs.setdefault("registration_shared_secret", matrix_homeserver.registration_shared_secret)
        client = MatrixBotClient(
            name or unique_localpart("bot"),
            matrix_homeserver.url,
            matrix_homeserver.server_name,
            storage_root or tmp_path / "data",
            **kwargs,
        )
        clients.append(client)
        if login:
            await client.login()
        return client

    yield factory
    for client in clients:
        await client.close()


@pytest_asyncio.fixture
async def start_sync() -> AsyncIterator[SyncStarter]:
    """`await start_sync(client, accept_invites=True)` -> a running recorder; stopped at teardown."""
    recorders: list[SyncRecorder] = []

    async def starter(
        client: MatrixBotClient, accept_invites: bool | Callable[[str, str], bool] = True
    ) -> SyncRecorder:
        recorder = SyncRecorder(client, accept_invites)
        recorders.append(recorder)
        await recorder.start()
        return recorder

    yield starter
    for recorder in recorders:
        await recorder.stop()
