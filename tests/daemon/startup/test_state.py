"""The `state` phase alone, on real lock files and SQLite: a private data directory, the lock, the stores, release."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.config.environment import DaemonEnvironment
from mindroom.config.main import Config
from mindroom.daemon.startup.plan import PhaseStops, Stopping
from mindroom.daemon.startup.state import StateHolder
from mindroom.state.errors import StateLockedError
from mindroom.state.sqlite.backend import SqliteState

pytestmark = pytest.mark.asyncio

SHARED = "the data directory is open to other users; it holds credentials and every conversation"


def _environment(tmp_path: Path) -> DaemonEnvironment:
    return DaemonEnvironment(tmp_path / "config.yaml", tmp_path / "data", {})


async def _stop(stops: PhaseStops) -> None:
    for part in stops.parts:
        await part.stop(Stopping("shutdown", 1.0))


async def _lock_is_free(storage: Path) -> bool:
    probe = SqliteState(storage)
    try:
        return await probe.try_lock() is None
    finally:
        await probe.close()


@pytest.mark.parametrize(("mode", "warned"), [(0o755, True), (0o750, True), (0o710, True), (0o700, False)])
async def test_state_phase_makes_the_data_directory_private_and_warns_when_it_was_not(
    tmp_path: Path, mode: int, warned: bool
):
    storage = tmp_path / "data"
    storage.mkdir()
    storage.chmod(mode)
    holder, stops = StateHolder(_environment(tmp_path)), PhaseStops("state")

    with capture_logs() as logs:
        await holder.open(Config(), stops)

    assert stat.S_IMODE(storage.stat().st_mode) == 0o700
    assert any(entry["event"] == SHARED for entry in logs) is warned
    await _stop(stops)


async def test_state_phase_takes_the_lock_opens_the_stores_and_its_stop_releases_them(tmp_path: Path):
    holder, stops = StateHolder(_environment(tmp_path)), PhaseStops("state")

    stores = await holder.open(Config(), stops)

    assert holder.backend is not None and holder.backend.locked and holder.stores is stores
    assert not holder.postgresql
    assert not await _lock_is_free(tmp_path / "data")  # a second daemon on this state is refused
    assert stores.journal.claim("helper", "$event") and not stores.journal.claim("helper", "$event")
    assert [part.name for part in stops.parts] == ["state"]

    await _stop(stops)

    assert holder.backend is None and holder.stores is None
    assert await _lock_is_free(tmp_path / "data")


async def test_state_phase_leaves_the_callers_state_locked_and_open(tmp_path: Path):
    given = SqliteState(tmp_path / "data")
    await given.acquire()
    holder, stops = StateHolder(_environment(tmp_path), given), PhaseStops("state")

    await holder.open(Config(), stops)
    await _stop(stops)

    assert holder.backend is given and given.locked and holder.stores is None
    assert not await _lock_is_free(tmp_path / "data")
    await given.close()


async def test_state_phase_refused_at_the_lock_still_closes_what_it_opened(tmp_path: Path):
    active = SqliteState(tmp_path / "data")
    await active.acquire()
    holder, stops = StateHolder(_environment(tmp_path)), PhaseStops("state")

    with pytest.raises(StateLockedError, match="held by another daemon"):
        await holder.open(Config(), stops)
    await _stop(stops)

    assert holder.backend is None and active.locked
    await active.close()
    assert await _lock_is_free(tmp_path / "data")
