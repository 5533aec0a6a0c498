"""Saving a watched file until the daemon's watcher answers with the reload a test waits for."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from mindroom.daemon.reload import ReloadOutcome


async def saved_until_seen(
    path: Path, text: str, outcomes: asyncio.Queue[ReloadOutcome], seen: Callable[[ReloadOutcome], bool]
) -> ReloadOutcome:
    """Save `text` to `path` until the watcher reports a reload that `seen` accepts, and return it.

    A watcher just started may miss a first save (its watch is not yet in place); saving the same text again
    changes nothing else, so each save that goes unanswered for a while is repeated, up to a deadline."""
    deadline = time.monotonic() + 30
    while True:
        await asyncio.to_thread(path.write_text, text)
        with contextlib.suppress(TimeoutError):
            while True:
                outcome = await asyncio.wait_for(outcomes.get(), 2.0)
                if seen(outcome):
                    return outcome
        assert time.monotonic() < deadline, f"the watcher never reported a reload for {path.name}"
