"""Which hooks one turn called: a list the turn opens in its context, appended to by every hook call in it.

The operators' views show it per turn (the dashboard's last turns). Tasks a turn starts copy its context,
so hooks run concurrently (collectors) land in the same list. Outside a traced turn nothing is recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["HOOK_TRACE", "hook_trace"]

HOOK_TRACE: ContextVar[list[str] | None] = ContextVar("mindroom_hook_trace", default=None)
"""The current turn's list of `plugin:hook` names called, in call order; None outside a traced turn."""


@contextlib.contextmanager
def hook_trace() -> Iterator[list[str]]:
    """Trace the hooks called in this block (an enclosing trace is reused: one turn, one list)."""
    current = HOOK_TRACE.get()
    if current is not None:
        yield current
        return
    calls: list[str] = []
    token = HOOK_TRACE.set(calls)
    try:
        yield calls
    finally:
        HOOK_TRACE.reset(token)
