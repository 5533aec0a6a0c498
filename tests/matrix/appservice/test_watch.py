"""The appservice's watch on the homeserver: it asks while transactions are quiet, says once that the homeserver
went away and once that it is back, and catches up then (again, if the homeserver went away during the catch-up)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from mindroom.matrix.appservice.watch import HomeserverWatch
from mindroom.matrix.errors import MatrixConnectionError

pytestmark = pytest.mark.asyncio


class _Homeserver:
    """Answers the watch's probe while `up`, else refuses or breaks the connection; records catch-ups."""

    def __init__(self) -> None:
        self.up = True
        self.refused = True
        self.probes = 0
        self.catch_ups: list[int] = []
        self.fail_catch_ups = 0
        self.changed = asyncio.Event()

    async def probe(self) -> None:
        self.probes += 1
        self.changed.set()
        if not self.up:
            raise MatrixConnectionError("connection refused" if self.refused else "reset", refused=self.refused)

    async def on_back(self, last_heard_ms: int) -> None:
        self.catch_ups.append(last_heard_ms)
        self.changed.set()
        if self.fail_catch_ups:
            self.fail_catch_ups -= 1
            raise MatrixConnectionError("gone again", refused=True)

    async def until(self, check: object, seconds: float = 15.0) -> None:
        async with asyncio.timeout(seconds):
            while not check():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()


@pytest_asyncio.fixture
async def homeserver() -> AsyncIterator[_Homeserver]:
    yield _Homeserver()


async def _watching(homeserver: _Homeserver, quiet_s: float) -> HomeserverWatch:
    watch = HomeserverWatch(homeserver.probe, homeserver.on_back, quiet_s=quiet_s)
    watch.start()
    return watch


async def test_appservice_watch_says_once_it_went_away_and_once_it_is_back_then_catches_up(homeserver: _Homeserver):
    watch = await _watching(homeserver, quiet_s=0.05)
    heard_before = int(time.time() * 1000)
    watch.heard()
    homeserver.up, homeserver.refused = False, False
    with capture_logs() as logs:
        await homeserver.until(lambda: homeserver.probes >= 3)
        homeserver.up = True
        await homeserver.until(lambda: homeserver.catch_ups)
    await watch.stop()

    events = [entry["event"] for entry in logs]
    assert events.count("homeserver unreachable; receiving resumes when it is back") == 1
    assert events.count("homeserver back") == 1
    assert len(homeserver.catch_ups) == 1
    assert heard_before <= homeserver.catch_ups[0] <= int(time.time() * 1000)  # the last transaction before


async def test_appservice_watch_does_not_ask_while_transactions_come(homeserver: _Homeserver):
    watch = await _watching(homeserver, quiet_s=2.0)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:  # a steady stream of transactions, for longer than the quiet spell
        watch.heard()
        await asyncio.sleep(0.05)
    asked_during = homeserver.probes
    await homeserver.until(lambda: homeserver.probes >= 1)  # quiet now: it asks
    await watch.stop()

    assert asked_during == 0
    assert homeserver.catch_ups == []


async def test_appservice_watch_asks_at_once_on_a_doubt_and_catches_up_after_a_restart(homeserver: _Homeserver):
    watch = await _watching(homeserver, quiet_s=3600)
    watch.doubt()
    await homeserver.until(lambda: homeserver.probes >= 1)
    assert homeserver.catch_ups == []  # it answered: nothing to catch up

    with capture_logs() as logs:
        watch.restarted()
        await homeserver.until(lambda: homeserver.catch_ups)
    await watch.stop()

    assert len(homeserver.catch_ups) == 1
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == []


async def test_appservice_watch_catches_up_again_when_the_homeserver_went_away_during_the_catch_up(
    homeserver: _Homeserver,
):
    watch = await _watching(homeserver, quiet_s=3600)
    homeserver.fail_catch_ups = 1
    watch.restarted()
    await homeserver.until(lambda: len(homeserver.catch_ups) >= 2)
    await watch.stop()

    assert homeserver.catch_ups[0] == homeserver.catch_ups[1]  # the same point to catch up from, both times
