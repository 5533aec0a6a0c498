"""A hook call's clock, and `hook_timeout_paused()`, which stops it while the hook waits for something not its own.

The call `mindroom.hooks.invocation` drives past its first await sits in `RUN` of the hook's own context, so a
block that waits for a person (a tool approval) or for a worker process to start (an isolated plugin) can stop
the hook's timeout and start it again with what was left of the budget.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["PAUSE", "RUN", "Pause", "hook_timeout_paused", "when_deadline"]

_perf = time.perf_counter


class Pause:
    """One `hook_timeout_paused` block: when it began, and the suspended hook call whose clock it stopped."""

    __slots__ = ("run", "started")

    def __init__(self, started: float) -> None:
        self.started = started
        self.run: Any = None


# Both live in the hook's own context (each call runs in a copy of the emitter's): the call `_finish` drives,
# and the pause block the hook is in, if any.
RUN: ContextVar[Any] = ContextVar("mindroom_hook_run", default=None)
PAUSE: ContextVar[Pause | None] = ContextVar("mindroom_hook_pause", default=None)


def when_deadline(deadline: float) -> float | None:
    """A deadline as `asyncio.Timeout` takes it (None: none, while the clock is stopped)."""
    return None if deadline == math.inf else deadline


@contextlib.contextmanager
def hook_timeout_paused() -> Iterator[None]:
    """Inside the block the running hook's timeout does not run: it waits for a person, not for itself.

    Outside a hook (or in a hook that has not awaited yet, whose `_finish` then starts paused) it costs nothing.
    """
    pause = Pause(_perf())
    token = PAUSE.set(pause)
    run = RUN.get()
    # A run inherited from an enclosing hook's context is not this hook's: its context lacks this pause.
    if run is not None and run.context.get(PAUSE) is pause and not run.timeout.expired():
        pause.run = run
        run.deadline = math.inf
        run.timeout.reschedule(None)
    try:
        yield
    finally:
        PAUSE.reset(token)
        if pause.run is not None:
            _resume(pause.run, pause)


def _resume(run: Any, pause: Pause) -> None:
    """Start the hook's clock again with what was left of its budget."""
    now = _perf()
    run.paused_s += now - pause.started
    run.deadline = run.task.get_loop().time() + run.limit_s - (now - run.start - run.paused_s)
    if not run.timeout.expired():
        run.timeout.reschedule(run.deadline)
