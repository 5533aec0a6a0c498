"""The HTTP app over the bots' bench: real bots, wiring and stores on recording Matrix clients, the real app
served by uvicorn on a free loopback port in the test's loop, and the scripted model server."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from openai import AsyncOpenAI

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import ApiSettings, api_settings
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.daemon.wiring import ApiCapabilities
from tests.bots.bench import Bench

__all__ = ["ApiBench", "BenchView"]


@dataclass
class BenchView:
    """The daemon as the app reads it: what it may use of the bench's run, no reloader unless a test gives one."""

    running: ApiCapabilities | None
    config_path: Path
    reloader: ReloadCoordinator | None = None


@dataclass
class ApiBench:
    """A bench with the app served on it: `url`, `client()` (httpx), the context."""

    bench: Bench
    view: BenchView
    ctx: ApiContext
    server: ApiServer
    clients: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30, **kwargs)
        self.clients.append(client)
        return client

    def openai(self, key: str) -> AsyncOpenAI:
        """The official client on `/v1` with `key` (closed with the bench)."""
        client = AsyncOpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0)
        self.clients.append(client)
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.close() if isinstance(client, AsyncOpenAI) else await client.aclose()
        await self.server.stop()


async def serve(bench: Bench, config_path: Path, settings: ApiSettings | None = None, **env: str) -> ApiBench:
    """The app over `bench` on a free port (`env`: the environment's API variables)."""
    # The bench's run started at 0 (every event is news); the operator's view shows a run started now.
    view = BenchView(dataclasses.replace(bench.daemon, clock=RunClock.starting()).api, config_path)
    base = settings or api_settings(env, port=0)
    ctx = ApiContext(view, base)
    server = ApiServer(ctx, create_app(ctx))
    await server.start()
    return ApiBench(bench, view, ctx, server)
