"""The event loop the daemon runs on: uvloop where it is installed, else asyncio's own.

uvloop is libuv's loop behind asyncio's interface: the same code runs on both, with fewer system calls
and less Python per socket event. A turn wakes the loop dozens of times (two syncs, the model call, the
answer, the store), so the loop itself was a sixth of the daemon's CPU per message on asyncio's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["loop_factory", "run_on_fast_loop"]

_T = TypeVar("_T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's `new_event_loop`, or asyncio's when uvloop is not installed (it has no Windows build)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_on_fast_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)` on the loop `loop_factory` gives."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
