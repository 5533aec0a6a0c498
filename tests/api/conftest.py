"""Fixtures for the HTTP app: `make_api(agents, env=..., **config)` serves the app over a started bench."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
import yaml

from mindroom.testing.model_server import ScriptedModelServer, model_server
from tests.api.support import ApiBench, serve
from tests.bots.bench import Bench, bench_config

__all__ = ["make_api", "model_server"]


@pytest_asyncio.fixture
async def make_api(
    tmp_path: Path, model_server: ScriptedModelServer
) -> AsyncIterator[Callable[..., Awaitable[ApiBench]]]:
    """`await make_api(agents, env={...}, registry=..., **config)`: a started bench with the app on it."""
    started: list[ApiBench] = []

    async def make(
        agents: dict[str, dict[str, Any]],
        *,
        env: dict[str, str] | None = None,
        registry: Any = None,
        settings: Any = None,
        **config: Any,
    ) -> ApiBench:
        built = bench_config(model_server, agents, **config)
        bench = Bench(tmp_path, built, registry)
        await bench.start()
        config_path = tmp_path / "config.yaml"
        config_path.write_text(yaml.safe_dump(built.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
        api = await serve(bench, config_path, settings, **(env or {}))
        started.append(api)
        return api

    yield make
    for api in started:
        await api.close()
        await api.bench.stop()
