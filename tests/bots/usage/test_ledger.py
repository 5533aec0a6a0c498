"""The usage ledger: a turn is counted in memory at once (its person's month), written in batches in the
background, read back whole by a report, and a restarted ledger starts from the month the state holds."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.bots.usage.ledger import UsageLedger
from mindroom.state.sqlite.usage import SqliteUsageStore
from mindroom.state.usage import UsageQuery, UsageRecord, month_start

pytestmark = pytest.mark.asyncio


def _turn(n: int, who: str, cost: float | None, at: float | None = None) -> UsageRecord:
    return UsageRecord(f"t{n}", at or time.time(), who, "helper", "!r:hs", "$t", "big", 10, 2, 0, 0, cost)


async def _written(store: SqliteUsageStore, turns: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(t.turns for t in store.query(UsageQuery())) < turns:
        assert time.monotonic() < deadline, f"{turns} turns not written in {timeout_s} s"
        await asyncio.sleep(0.01)


async def test_ledger_counts_at_once_writes_in_the_background_and_restarts_from_the_state(tmp_path: Path):
    store = SqliteUsageStore(tmp_path / "usage.db")
    ledger = UsageLedger(store, lambda: 90, flush_s=0.05)
    await ledger.start()

    assert ledger.record(_turn(1, "@alice:hs", 0.25)) == (0.0, 0.25)
    assert ledger.record(_turn(2, "@alice:hs", None)) == (0.25, 0.25)  # unpriced: tokens only
    ledger.record(_turn(3, "@bob:hs", 1.0))
    ledger.record(_turn(4, "@bob:hs", 2.0, at=month_start(time.time()) - 10))  # last month: not this month's
    assert ledger.month_spend("@alice:hs") == 0.25
    await _written(store, 4)  # without a report asking: the writer's own round

    await ledger.stop()
    again = UsageLedger(store, lambda: 90, flush_s=60)
    again.record(_turn(5, "@alice:hs", 0.5))  # recorded before the start: counted with what the state holds
    await again.start()
    assert again.month_spend("@alice:hs") == 0.75
    assert again.month_spend("@bob:hs") == 1.0
    assert again.month_spend("@alice:hs.evil") == 0.0
    [alice] = await again.query(UsageQuery(requester="@alice:hs"))  # writes what is pending first
    assert (alice.turns, alice.unpriced_turns, alice.cost_usd) == (3, 1, 0.75)
    await again.stop()
    store.close()


async def test_ledger_writes_a_long_batch_without_waiting_for_its_round(tmp_path: Path):
    store = SqliteUsageStore(tmp_path / "usage.db")
    ledger = UsageLedger(store, lambda: 90, flush_s=3600, batch=5)
    await ledger.start()
    for n in range(5):
        ledger.record(_turn(n, "@alice:hs", 0.01))
    await _written(store, 5)
    await ledger.stop()
    store.close()


async def test_ledger_rolls_turns_older_than_the_retention_window_into_days(tmp_path: Path):
    store = SqliteUsageStore(tmp_path / "usage.db")
    ledger = UsageLedger(store, lambda: 2, flush_s=3600)
    now = time.time()
    for n, age_days in enumerate((0, 1, 3, 3, 4)):
        ledger.record(_turn(n, "@alice:hs", 0.1, at=now - age_days * 86400))
    await ledger.flush()

    assert await ledger.roll_up(now) == 3
    totals = await ledger.query(UsageQuery(group_by=("thread_id",)))
    assert [(t.key, t.turns) for t in totals] == [(("",), 3), (("$t",), 2)]
    store.close()


class _LockedForRollUp(SqliteUsageStore):
    """A store whose folding fails as a busy database does; turns are still written."""

    def roll_up(self, before: float) -> int:
        raise sqlite3.OperationalError("database is locked")


async def test_ledger_keeps_writing_when_a_roll_up_fails(tmp_path: Path):
    store = _LockedForRollUp(tmp_path / "usage.db")
    ledger = UsageLedger(store, lambda: 90, flush_s=0.02)
    with capture_logs() as logs:
        await ledger.start()
        await _until(lambda: any(log["event"] == "usage not rolled up" for log in logs))
        ledger.record(_turn(1, "@alice:hs", 0.1))  # after the failed roll-up: the writer's next round writes it
        await _written(store, 1)
    await ledger.stop()
    store.close()
    assert next(log["error"] for log in logs if log["event"] == "usage not rolled up") == "database is locked"


async def _until(check, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)
