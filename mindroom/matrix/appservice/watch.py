"""`HomeserverWatch`: in appservice mode, noticing the homeserver go away and come back, and catching up then.

Syncing bots notice an outage because their long-poll breaks. Receiving through transactions, nothing of the
daemon waits on the homeserver: it is the homeserver that calls. So the watch asks it (`probe`) whenever no
transaction came for `QUIET_S`, and at once when a request of the appservice failed (`doubt`). An unanswered
probe logs a warning once; the watch then asks every `REFUSED_RETRY_S` while the connection is refused (the
homeserver is down or restarting) and backs off from half a second to 30 s on other failures. When it answers
again the watch logs that it is back and runs `on_back` (the catch-up) with the wall-clock time of the last
transaction before the outage. `restarted` runs the catch-up without an outage seen: a homeserver that restarted
between two probes gives itself away by numbering its transactions from the start again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import HomeserverRetries
from mindroom.matrix.errors import MatrixConnectionError

__all__ = ["QUIET_S", "HomeserverWatch"]

logger = get_logger(__name__)

QUIET_S = 5.0
"""How long without a transaction before the watch asks whether the homeserver is still there."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class HomeserverWatch:
    """Probes the homeserver while transactions are quiet; `start()` it once receiving, `stop()` to end it."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[None]],
        on_back: Callable[[int], Awaitable[None]],
        *,
        quiet_s: float = QUIET_S,
    ) -> None:
        self._probe = probe
        self._on_back = on_back
        self._quiet_s = quiet_s
        self._heard_at = time.monotonic()
        self._heard_ms = _now_ms()
        self._wake = asyncio.Event()
        self._catch_up_since: int | None = None
        """Set while a catch-up is due: the wall-clock time (ms) of the last transaction before the outage."""
        self._task: asyncio.Task[None] | None = None

    def heard(self) -> None:
        """A transaction came: the homeserver is there."""
        self._heard_at = time.monotonic()
        self._heard_ms = _now_ms()

    def doubt(self) -> None:
        """A request to the homeserver failed: probe now."""
        self._wake.set()

    def restarted(self) -> None:
        """The homeserver restarted unseen (or skipped transactions): catch up on what it may have dropped since
        the transaction before."""
        if self._catch_up_since is None:
            self._catch_up_since = self._heard_ms
        self._wake.set()

    def start(self) -> None:
        """Start watching (again, after `stop`)."""
        if self._task is None or self._task.done():
            self.heard()
            self._task = asyncio.create_task(self._run(), name="homeserver-watch")

    async def stop(self) -> None:
        """Stop watching, and wait for a catch-up under way to end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._until_due()
            self._wake.clear()
            await self._until_answered()

    async def _until_due(self) -> None:
        while not self._wake.is_set():
            remaining = self._heard_at + self._quiet_s - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), remaining)

    async def _until_answered(self) -> None:
        """Probe until the homeserver answers (and the catch-up due, if any, is done)."""
        went_away: float | None = None
        attempts = 0
        retries = HomeserverRetries()
        while True:
            try:
                await self._probe()
                if went_away is not None:
                    downtime = round(time.monotonic() - went_away, 1)
                    logger.info("homeserver back", downtime_s=downtime, attempts=attempts)
                    went_away = None
                if self._catch_up_since is not None:
                    await self._on_back(self._catch_up_since)
                    self._catch_up_since = None
            except MatrixConnectionError as exc:
                attempts += 1
                if went_away is None:
                    went_away = time.monotonic()
                    logger.warning("homeserver unreachable; receiving resumes when it is back", error=str(exc))
                    if self._catch_up_since is None:
                        self._catch_up_since = self._heard_ms
                await asyncio.sleep(retries.wait(refused=exc.refused))
                continue
            except Exception:
                # A fault of the catch-up itself: logged loudly, and the watch goes on (it is the daemon's ears).
                logger.exception("catching up after the homeserver came back failed")
                self._catch_up_since = None
            self._heard_at = time.monotonic()
            return
