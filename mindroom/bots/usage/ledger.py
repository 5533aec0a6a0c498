"""`UsageLedger`: each turn's usage counted in memory at once and written to the state in batches, off the reply path.

A turn only appends its record to a list and adds its cost to the person's month (what budgets read); the
ledger's task writes the list every few seconds (at once when it is long), on a thread, and folds turns older
than the retention window into daily rows once an hour. Reading (`query`) writes what is pending first, so a
report always includes the turns answered before it was asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from mindroom.logging_config import get_logger
from mindroom.state.usage import (
    BudgetCap,
    UsageQuery,
    UsageRecord,
    UsageStore,
    UsageTotals,
    month_start,
    next_month_start,
)
from mindroom.tasks import TaskOwner

__all__ = ["UsageLedger"]

logger = get_logger(__name__)

_DAY_S = 86400.0
_ROLLUP_EVERY_S = 3600.0
_MAX_KEPT = 100_000
"""Records held in memory while the state cannot take them; older ones are dropped beyond this (and logged)."""


class UsageLedger:
    """What turns spent: recorded at once in memory, written in batches, summed per person for the month."""

    def __init__(
        self,
        store: UsageStore,
        retention_days: Callable[[], int],
        *,
        flush_s: float = 2.0,
        batch: int = 200,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        """Where the records are written."""
        self._retention_days = retention_days
        self._flush_s = flush_s
        self._batch = batch
        self._clock = clock
        self._pending: list[UsageRecord] = []
        self._month_start = month_start(clock())
        self._month_end = next_month_start(self._month_start)
        self._month: dict[str, float] = {}
        self._caps: dict[str, BudgetCap] = {}
        self._wake = asyncio.Event()
        self._flushing = asyncio.Lock()
        self._tasks = TaskOwner("usage")
        self.cost_usd: dict[tuple[str, str], float] = {}
        """(agent, model) -> USD its turns cost since the start (Prometheus: no label per person)."""
        self.budget_turns: dict[str, int] = {"fallback": 0, "refused": 0}
        """Turns a budget moved to the fallback model or refused, since the start."""
        self.tell_admins: Callable[[str], Awaitable[object]] | None = None
        """How a budget warning also reaches the admin room (set by the run once it knows the router)."""

    @property
    def month_end(self) -> float:
        """When the current month ends (and monthly budgets start again)."""
        self._roll_month(self._clock())
        return self._month_end

    def _roll_month(self, now: float) -> None:
        if now >= self._month_end:
            self._month_start = month_start(now)
            self._month_end = next_month_start(now)
            self._month = {}

    def record(self, record: UsageRecord) -> tuple[float, float]:
        """Count one turn (no I/O); the person's spend this month before and after it, in USD."""
        self._roll_month(record.at)
        self._pending.append(record)
        before = self._month.get(record.requester, 0.0)
        after = before
        if record.cost_usd:
            after = self._month[record.requester] = before + record.cost_usd
            key = (record.agent, record.model)
            self.cost_usd[key] = self.cost_usd.get(key, 0.0) + record.cost_usd
        if len(self._pending) >= self._batch:
            self._wake.set()
        return before, after

    def month_spend(self, requester: str) -> float:
        """What `requester` spent this month (UTC) on priced models, in USD, turns not yet written included."""
        self._roll_month(self._clock())
        return self._month.get(requester, 0.0)

    def month_total(self) -> float:
        """What everyone spent this month (UTC) on priced models, in USD, turns not yet written included."""
        self._roll_month(self._clock())
        return sum(self._month.values())

    def month_spends(self) -> dict[str, float]:
        """What each person spent this month (UTC) on priced models, in USD."""
        self._roll_month(self._clock())
        return dict(self._month)

    def cap(self, requester: str) -> float | None:
        """`requester`'s own monthly limit in USD, if one was set for them."""
        found = self._caps.get(requester)
        return found.limit_usd if found is not None else None

    def caps(self) -> list[BudgetCap]:
        """Every person's own monthly limit, by person."""
        return sorted(self._caps.values(), key=lambda cap: cap.requester)

    async def set_cap(self, requester: str, limit_usd: float, set_by: str) -> BudgetCap:
        """Give `requester` a monthly limit of their own (kept in the state; in force from their next turn)."""
        cap = BudgetCap(requester, limit_usd, set_by, self._clock())
        await asyncio.to_thread(self.store.set_cap, cap)
        self._caps[requester] = cap
        return cap

    async def remove_cap(self, requester: str) -> bool:
        """Put `requester` back under `budgets.monthly_limit_usd`; False when they had no limit of their own."""
        if self._caps.pop(requester, None) is None:
            return False
        await asyncio.to_thread(self.store.remove_cap, requester)
        return True

    async def start(self) -> None:
        """Read this month's spend per person, then write in the background until `stop`."""
        now = self._clock()
        totals = await asyncio.to_thread(self.store.query, UsageQuery(since=month_start(now), group_by=("requester",)))
        for total in totals:  # turns recorded before the start are pending, not in the store: both count
            self._month[total.key[0]] = self._month.get(total.key[0], 0.0) + total.cost_usd
        self._caps = await asyncio.to_thread(self.store.caps)
        self._tasks.spawn(self._run(), "usage writer", name="usage-writer")
        await asyncio.sleep(0)  # the writer starts now: a stop right after start cancels a running task

    async def _run(self) -> None:
        rolled_at = float("-inf")
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._flush_s):
                    await self._wake.wait()
            self._wake.clear()
            await self.flush()
            now = self._clock()
            if now - rolled_at >= _ROLLUP_EVERY_S:
                rolled_at = now
                try:
                    await self.roll_up(now)
                except Exception as error:  # the state is away: turns keep being recorded, folded next hour
                    logger.warning("usage not rolled up", error=str(error) or type(error).__name__)

    async def roll_up(self, now: float) -> int:
        """Fold the turns older than the retention window into daily rows; how many turns were folded."""
        before = now - self._retention_days() * _DAY_S
        folded = await asyncio.to_thread(self.store.roll_up, before)
        if folded:
            logger.info("usage rolled up by day", turns=folded)
        return folded

    async def flush(self) -> None:
        """Write every turn recorded so far (in one batch, on a thread); kept for the next try if that fails."""
        async with self._flushing:
            batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                await asyncio.to_thread(self.store.add, batch)
            except Exception as error:
                kept = (batch + self._pending)[-_MAX_KEPT:]
                logger.warning(
                    "usage not written; kept for the next try",
                    turns=len(batch),
                    dropped=len(batch) + len(self._pending) - len(kept),
                    error=str(error) or type(error).__name__,
                )
                self._pending = kept

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """Run `work` (a notice about usage) as a task the ledger owns: it never holds up the turn."""
        self._tasks.spawn(work, what)

    async def query(self, query: UsageQuery) -> list[UsageTotals]:
        """The sums `query` asks for, over every turn recorded until now."""
        await self.flush()
        return await asyncio.to_thread(self.store.query, query)

    async def stop(self) -> None:
        """Stop the writer and write what is pending (before the state closes)."""
        await self._tasks.cancel_all()
        await self.flush()
