"""Which state a daemon uses, and the standby's wait for the lock (on real lock files)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from mindroom.config.environment import DaemonEnvironment
from mindroom.config.main import Config
from mindroom.daemon.standby import daemon_state, database_url, wait_for_lock
from mindroom.state.sqlite.backend import SqliteState

pytestmark = pytest.mark.asyncio

URL = "postgresql://mindroom:secret-pw@db.example:5432/mindroom"


def _environment(tmp_path: Path, values: dict[str, str]) -> DaemonEnvironment:
    return DaemonEnvironment(tmp_path / "config.yaml", tmp_path / "data", values)


async def test_standby_database_url_comes_from_the_environment_before_the_config(tmp_path: Path):
    config = Config.model_validate({"storage": {"database_url": "postgresql://from-config/db"}})

    assert database_url(_environment(tmp_path, {"MINDROOM_DATABASE_URL": URL}), config) == URL
    assert database_url(_environment(tmp_path, {}), config) == "postgresql://from-config/db"
    assert database_url(_environment(tmp_path, {}), Config()) is None
    assert daemon_state(_environment(tmp_path, {}), Config()).kind == "sqlite"
    state = daemon_state(_environment(tmp_path, {"MINDROOM_DATABASE_URL": URL}), Config())
    assert state.kind == "postgresql"
    assert state.location == "postgresql://mindroom@db.example:5432/mindroom"


async def test_standby_config_refuses_a_database_url_that_is_not_postgresql():
    with pytest.raises(ValueError, match="postgresql://"):
        Config.model_validate({"storage": {"database_url": "mysql://db/x"}})


async def test_standby_waits_then_takes_over_continuing_the_replaced_run(tmp_path: Path):
    active = SqliteState(tmp_path / "data")
    await active.acquire()
    standby = SqliteState(tmp_path / "data")
    stop = asyncio.Event()
    waiting = asyncio.create_task(wait_for_lock(standby, stop, poll_s=0.05))
    await asyncio.sleep(0.3)
    assert not waiting.done()

    await active.close()
    takeover = await asyncio.wait_for(waiting, 10)

    assert takeover is not None and standby.locked
    assert takeover.replaced is not None and takeover.replaced.pid == os.getpid()
    assert takeover.run_since == takeover.replaced.since
    await standby.close()


async def test_standby_stops_waiting_when_told_to(tmp_path: Path):
    active = SqliteState(tmp_path / "data")
    await active.acquire()
    standby = SqliteState(tmp_path / "data")
    stop = asyncio.Event()
    waiting = asyncio.create_task(wait_for_lock(standby, stop, poll_s=0.05))
    await asyncio.sleep(0.2)

    stop.set()

    assert await asyncio.wait_for(waiting, 5) is None
    assert not standby.locked
    await active.close()


async def test_standby_with_a_free_lock_starts_a_fresh_run(tmp_path: Path):
    state = SqliteState(tmp_path / "data")

    takeover = await wait_for_lock(state, asyncio.Event())

    assert takeover is not None and takeover.replaced is None and takeover.run_since is None
    assert (tmp_path / "data" / "state" / "daemon.lock").stat().st_mode & 0o777 == 0o600
    await state.close()
