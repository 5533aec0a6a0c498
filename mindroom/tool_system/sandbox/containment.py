"""Keeping hold of every process a command starts without bubblewrap, whatever it does to its reaper.

Without bubblewrap a command runs under `reaper.py`, a child subreaper that kills everything the command
started when it ends. The command runs as the daemon's user, though, so it can kill the reaper first
(`kill -9 $PPID`); what it started would then be re-parented above the reaper and outlive it. The
daemon's side keeps hold of them itself, in one of two ways:

- A cgroup (v2) per command, where the daemon may make one below its own cgroup (it runs as root, or its
  cgroup is delegated to it): the reaper is moved into a fresh cgroup before it starts the command, and
  when the command ends every process in it is killed (`cgroup.kill`, or SIGKILL for each process the
  cgroup lists until none is left). A process cannot leave a cgroup without write access to another.
- Otherwise the daemon is a child subreaper while such commands run, so a process orphaned below it is
  re-parented to the daemon rather than leaving its tree, and the reaper marks itself before it starts
  the command: it lowers its hard `RLIMIT_MSGQUEUE` by one byte, a limit every descendant inherits and no
  unprivileged process can raise again. When a command ends, every child of the daemon that carries the
  mark, other than a running command's own reaper, is killed with its descendants and reaped.

A command running as root can undo either (move itself to another cgroup, raise the limit): run the
daemon as an unprivileged user, or use bubblewrap. While the daemon is a subreaper, an orphan of another
of its child processes (not a shell command) becomes its child too, and stays a zombie once it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import itertools
import os
import signal
import threading
from pathlib import Path
from typing import ClassVar

from mindroom.logging_config import get_logger
from mindroom.tool_system.sandbox.reaper import GO, descendants, hard_msgqueue_limit, process_tree

__all__ = ["CommandHold", "command_cgroups", "is_marked"]

logger = get_logger(__name__)

_PR_SET_CHILD_SUBREAPER = 36
_KILL_LIMIT_S = 5.0
_PREFIX = "mindroom-shell-"


@functools.cache
def command_cgroups() -> Path | None:
    """The daemon's own cgroup v2 folder when it may make per-command cgroups below it, else None."""
    try:
        own = next(
            line[3:].strip() for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")
        )
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except (OSError, StopIteration):
        return None
    for line in mounts:
        fields, _, kind = line.partition(" - ")
        if not kind.startswith("cgroup2 "):
            continue
        root, point = fields.split()[3:5]
        if own != root and not own.startswith(root.rstrip("/") + "/"):
            continue
        folder = Path(point) / own[len(root) :].lstrip("/")
        if os.access(folder, os.W_OK) and os.access(folder / "cgroup.procs", os.W_OK):
            _remove_stale(folder)
            return folder
    return None


def _remove_stale(parent: Path) -> None:
    """Remove the empty cgroups a daemon that is gone left behind (it died before removing them)."""
    for folder in parent.glob(f"{_PREFIX}*"):
        owner = folder.name.removeprefix(_PREFIX).partition("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                folder.rmdir()


def is_marked(pid: int) -> bool:
    """Whether process `pid` carries the reaper's mark: a hard `RLIMIT_MSGQUEUE` below the daemon's own."""
    try:
        return hard_msgqueue_limit(pid) < hard_msgqueue_limit()
    except OSError:  # gone, or not ours to read
        return False


class _Subreaper:
    """Whether this process is a child subreaper now, for how many commands, and which reapers are theirs."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    commands: ClassVar[int] = 0
    reapers: ClassVar[set[int]] = set()

    @classmethod
    def enter(cls) -> None:
        with cls.lock:
            if cls.commands == 0:
                _set_child_subreaper(1)
            cls.commands += 1

    @classmethod
    def leave(cls, reaper: int | None) -> None:
        with cls.lock:
            cls.reapers.discard(-1 if reaper is None else reaper)
            cls.commands -= 1
            if cls.commands == 0:
                _set_child_subreaper(0)


class _Cgroups:
    """Set once making or joining a command's cgroup failed here: the subreaper holds every later command."""

    failed: ClassVar[bool] = False


def _set_child_subreaper(value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, value, 0, 0, 0)


class CommandHold:
    """The daemon's hold on one command run under the reaper: made before it starts, released when it ended."""

    _numbers: ClassVar[itertools.count[int]] = itertools.count()

    def __init__(self) -> None:
        self.cgroup: Path | None = None
        self.reaper: int | None = None
        parent = None if _Cgroups.failed else command_cgroups()
        if parent is not None:
            folder = parent / f"{_PREFIX}{os.getpid()}-{next(self._numbers)}"
            try:
                folder.mkdir()
                self.cgroup = folder
            except OSError as exc:
                self._give_up_cgroups(exc)
        if self.cgroup is None:
            _Subreaper.enter()

    async def start(self, reaper: int, stdin: asyncio.StreamWriter | int) -> None:
        """Hold the process `reaper` (in the cgroup, or known as a reaper), then let it start the command.

        The go-ahead is written to the reaper's stdin, or to the pipe whose write end is the file descriptor
        `stdin` (the reaper's `--go-fd`, for a command that needs its stdin), which is then closed.
        """
        self.reaper = reaper
        if self.cgroup is not None:
            try:
                (self.cgroup / "cgroup.procs").write_text(str(reaper))
            except OSError as exc:
                self._give_up_cgroups(exc)
                _Subreaper.enter()  # the command has not started yet: nothing it starts can be orphaned before this
        if self.cgroup is None:
            with _Subreaper.lock:
                _Subreaper.reapers.add(reaper)
        # Only now: the reaper marks itself after this, so a sweep never takes a reaper not yet known as one.
        if isinstance(stdin, int):
            with contextlib.suppress(OSError):
                os.write(stdin, GO)
            os.close(stdin)
            return
        stdin.write(GO)
        with contextlib.suppress(ConnectionError):
            await stdin.drain()
        stdin.close()

    async def release(self) -> None:
        """Kill every process of the command that is still alive (once the reaper has exited)."""
        if self.cgroup is not None:
            await self._kill_cgroup()
            return
        try:
            await self._sweep()
        finally:
            _Subreaper.leave(self.reaper)

    def _give_up_cgroups(self, error: OSError) -> None:
        if not _Cgroups.failed:
            logger.warning(
                "shell commands are held without cgroups", error=error.strerror, parent=str(command_cgroups())
            )
        _Cgroups.failed = True
        self._drop_cgroup()

    def _drop_cgroup(self) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()
            self.cgroup = None

    async def _kill_cgroup(self) -> None:
        assert self.cgroup is not None
        kill = self.cgroup / "cgroup.kill"
        deadline = asyncio.get_running_loop().time() + _KILL_LIMIT_S
        while members := _members(self.cgroup):
            if asyncio.get_running_loop().time() > deadline:
                logger.warning("a command's processes outlived their kill", cgroup=str(self.cgroup), left=members)
                return
            if kill.exists():  # Linux 5.14 and later: one write kills them all, forks in flight included
                with contextlib.suppress(OSError):
                    kill.write_text("1")
            else:
                for pid in members:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.01)
        self._drop_cgroup()

    async def _sweep(self) -> None:
        """Kill the marked children of this process (escaped from a reaper) and all they started; reap them."""
        me = os.getpid()
        killed: set[int] = set()
        deadline = asyncio.get_running_loop().time() + _KILL_LIMIT_S
        while asyncio.get_running_loop().time() < deadline:
            with _Subreaper.lock:
                running = set(_Subreaper.reapers)
            tree = process_tree()
            ours = [pid for pid in tree.get(me, ()) if pid not in running and (pid in killed or is_marked(pid))]
            if not ours:
                return
            for pid in ours:
                for victim in (*descendants(pid, tree), pid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(victim, signal.SIGKILL)
                    killed.add(victim)
            await asyncio.sleep(0.01)
            for pid in ours:  # our children now, adopted: nobody else waits for them
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG never blocks
        logger.warning("a command's processes outlived their kill", left=sorted(killed))


def _members(cgroup: Path) -> list[int]:
    try:
        return [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
    except OSError:
        return []
