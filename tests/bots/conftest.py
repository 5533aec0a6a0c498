"""Fixtures for the bots package: a pipeline on recording clients (`make_bench`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio

from mindroom.testing.model_server import ScriptedModelServer, model_server
from tests.bots.bench import Bench, bench_config

__all__ = ["make_bench", "model_server"]


@pytest_asyncio.fixture
async def make_bench(
    tmp_path: Path, model_server: ScriptedModelServer
) -> AsyncIterator[Callable[..., Awaitable[Bench]]]:
    """`await make_bench(agents, **config)`: a started pipeline for that config (stopped after the test)."""
    started: list[Bench] = []

    async def make(agents: dict[str, dict[str, Any]], *, registry: Any = None, **config: Any) -> Bench:
        bench = Bench(tmp_path, bench_config(model_server, agents, **config), registry)
        started.append(bench)
        await bench.start()
        return bench

    yield make
    for bench in started:
        await bench.stop()
