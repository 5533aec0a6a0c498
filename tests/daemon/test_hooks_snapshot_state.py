"""The hook counters reach `mindroom hooks list` through the state: a file on SQLite, a row on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mindroom.config.environment import DaemonEnvironment
from mindroom.daemon.hooks_snapshot import read_state_hooks_snapshot, write_snapshots_until_cancelled
from mindroom.hooks.registry import HookRegistry
from mindroom.state.location import open_state_backend

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None


async def test_hooks_snapshot_is_live_while_written_and_final_after(tmp_path: Path, url: str | None):
    (tmp_path / "config.yaml").write_text("agents: {}\n")
    values = {"MINDROOM_DATABASE_URL": url} if url else {}
    environment = DaemonEnvironment(tmp_path / "config.yaml", tmp_path / "data", values)
    state = open_state_backend(environment.storage_root, url)
    await state.acquire()
    store = (await state.open_stores()).snapshots
    writing = asyncio.create_task(write_snapshots_until_cancelled(store, HookRegistry.empty, interval_s=0.05))
    try:
        await asyncio.sleep(0.3)
        if url:
            await asyncio.to_thread(state.connection.flush)  # type: ignore[attr-defined]
        live = await asyncio.to_thread(read_state_hooks_snapshot, environment)
        assert live is not None and live.running and live.is_live
    finally:
        writing.cancel()
        await asyncio.gather(writing, return_exceptions=True)
        await state.close()

    final = await asyncio.to_thread(read_state_hooks_snapshot, environment)
    assert final is not None and final.running is False and not final.is_live
    assert (tmp_path / "data" / "state" / "hooks.json").exists() is (url is None)
