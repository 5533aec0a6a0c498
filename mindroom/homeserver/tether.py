"""Python children that die with the process that started them, however it ends (`kill -9` included).

On Linux the child asks the kernel, between fork and exec, for SIGTERM when its parent dies
(`PR_SET_PDEATHSIG`). The kernel sends it when the *thread* that forked the child ends, not the
process, so every tethered child is forked by one spawner thread that lives as long as the process:
callers may start children from short-lived worker threads (`asyncio.to_thread`). Where prctl is
missing or refused, the child runs under this module's watchdog instead
(`python -m mindroom.homeserver.tether <parent pid> <module> <args...>`): a thread inside the child
that notices it was re-parented and stops it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import queue
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from mindroom.logging_config import get_logger

__all__ = ["main", "spawn_module"]

logger = get_logger(__name__)

_PR_SET_PDEATHSIG = 1
_WATCH_POLL_S = 0.25
# The orphan gets this long to stop on SIGTERM (Synapse closes its database) before SIGKILL.
_WATCH_GRACE_S = 10.0

_Prctl = Callable[[int, int, int, int, int], int]
_T = TypeVar("_T")


@functools.cache
def _load_prctl() -> _Prctl | None:
    """libc's prctl, resolved once in the parent (the child between fork and exec must not load libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl  # type: ignore[no-any-return]


def _die_with(parent: int, prctl: _Prctl) -> Callable[[], None]:
    """A `preexec_fn`: SIGTERM when the parent dies; exit at once if it already died before prctl took effect."""

    def preexec() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class _Spawner:
    """The one thread that forks every tethered child; it waits for work until the process exits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def call(self, work: Callable[[], _T]) -> _T:
        """Run `work` on the spawner thread and return its result (or raise its exception) here."""
        with self._lock:
            # A forked copy of this process has no spawner thread even if the object says it had one.
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="mindroom-spawner", daemon=True)
                self._thread.start()
        done: Future[_T] = Future()
        self._jobs.put((work, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            work, done = self._jobs.get()
            try:
                done.set_result(work())
            except BaseException as exc:  # handed to the caller, which raises it
                done.set_exception(exc)


_SPAWNER = _Spawner()


def spawn_module(module: str, args: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """`python -m <module> <args...>` as a child that dies with this process; `popen` goes to `subprocess.Popen`."""
    parent = os.getpid()
    prctl = _load_prctl()
    if prctl is not None:
        command = [sys.executable, "-m", module, *args]
        try:
            return _SPAWNER.call(lambda: subprocess.Popen(command, preexec_fn=_die_with(parent, prctl), **popen))
        except subprocess.SubprocessError as exc:  # prctl refused (a sandbox): the watchdog does the same job
            logger.warning("parent-death signal unavailable; using a watchdog", module=module, error=str(exc))
    watched = [sys.executable, "-m", __name__, str(parent), module, *args]
    return subprocess.Popen(watched, **popen)


def _watch(parent: int) -> None:
    """In the child: once re-parented (the parent died), SIGTERM this process, then SIGKILL it after a grace."""
    while os.getppid() == parent:
        time.sleep(_WATCH_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_WATCH_GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: Sequence[str]) -> int:
    """Run `<module>` as `__main__` in this process, watched: `<parent pid> <module> <args...>`."""
    parent, module, args = int(argv[0]), argv[1], list(argv[2:])
    if os.getppid() != parent:  # the parent died before the watch began
        return 1
    threading.Thread(target=_watch, args=(parent,), name="mindroom-tether", daemon=True).start()
    sys.argv = [sys.argv[0], *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
