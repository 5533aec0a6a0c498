"""Run one command so that nothing it starts outlives it: a child subreaper that kills every descendant.

The shell tool starts this when no sandbox is available, as `python -I -S reaper.py PARENT_PID PROGRAM
ARG...` (an MCP server, which talks on its stdin, with `--go-fd N` before PARENT_PID).
`PR_SET_CHILD_SUBREAPER` makes orphaned descendants (a `setsid` or double-forked daemon included) children
of this process instead of init's, so when the command exits, or SIGTERM arrives (the shell
tool's timeout, or the daemon dying: `PR_SET_PDEATHSIG`), every one of them can be found and killed.

It starts the command only once the daemon holds it (`containment.py`: in a cgroup of its own, or known
as a reaper) and says so with `GO` on stdin; then it marks itself for the daemon, which finds what the
command started even if the command kills this process. Standard library only: it runs without
site-packages.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time

__all__ = ["GO", "MARK_CEILING", "descendants", "hard_msgqueue_limit", "kill_descendants", "main", "process_tree"]

GO = b"g"
"""What the daemon writes to the reaper's stdin once it holds the reaper: the command starts then."""
MARK_CEILING = 2**62
"""The marked hard `RLIMIT_MSGQUEUE` when the daemon's is unlimited."""
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _StopError(Exception):
    """A stop signal arrived: end the command and everything it started."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def process_tree() -> dict[int, list[int]]:
    """The children of every process, by parent pid (read from `/proc`)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        # The command name in parentheses may hold spaces and parentheses; the fields after the last ')' do not.
        parent = int(data[data.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry))
    return children


def descendants(pid: int, tree: dict[int, list[int]] | None = None) -> set[int]:
    """Every live process below `pid` in the process tree (`tree`, or read from `/proc` now)."""
    children = process_tree() if tree is None else tree
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def kill_descendants(limit_s: float = 5.0) -> None:
    """SIGKILL every descendant and reap them, until this process has no child left (or `limit_s` passed)."""
    me = os.getpid()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return  # no child left, so no descendant either: orphans are re-parented to us
        for pid in descendants(me):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def hard_msgqueue_limit(pid: int = 0) -> int:
    """The hard `RLIMIT_MSGQUEUE` of process `pid` (this one for 0), unlimited as a number above any mark."""
    hard = resource.prlimit(pid, resource.RLIMIT_MSGQUEUE)[1]
    return 2 * MARK_CEILING if hard == resource.RLIM_INFINITY else hard


def _mark() -> None:
    """Lower this process's hard `RLIMIT_MSGQUEUE` by a byte: inherited by every descendant, never raised again.

    Without the privilege to raise it back, a descendant cannot drop the mark by which the daemon finds it.
    """
    hard = hard_msgqueue_limit()
    if hard == 0:
        return
    marked = MARK_CEILING if hard > MARK_CEILING else hard - 1
    soft = resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0]
    soft = marked if soft == resource.RLIM_INFINITY or soft > marked else soft
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (soft, marked))


def _held(go_fd: int | None = None) -> bool:
    """Wait for the daemon's `GO`: on stdin (the command then gets /dev/null as its stdin), or on `go_fd`.

    A command that talks on its stdin (an MCP server) is started with `--go-fd N`: the daemon's word comes
    on that pipe instead, and the command keeps the reaper's stdin.
    """
    if go_fd is not None:
        said = os.read(go_fd, len(GO))
        os.close(go_fd)
        return said == GO
    said = os.read(0, len(GO))
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    return said == GO


def _stop(signum: int, _frame: object) -> None:
    raise _StopError(signum)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main(argv: list[str]) -> int:
    """Become a subreaper bound to the parent's life, run the command, then kill what it left behind."""
    go_fd = None
    if argv[0] == "--go-fd":
        go_fd, argv = int(argv[1]), argv[2:]
    parent, program, args = int(argv[0]), argv[1], argv[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the daemon died before prctl took effect
        return 1
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _stop)
    code = 1
    try:
        if not _held(go_fd):
            return 1  # the daemon gave up on the command before it started
        _mark()
        # Blocked across fork, so a stop signal never runs our handler inside the child.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        child = os.fork()
        if child == 0:
            for signum in _STOP_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            try:
                os.execv(program, args)  # noqa: S606 - the allowlisted program itself, never a shell
            except OSError as exc:
                os.write(2, f"cannot run {program}: {exc.strerror}\n".encode())
            os._exit(127)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        while True:
            pid, status = os.wait()
            if pid == child:
                code = _exit_code(status)
                break
    except _StopError as stop:
        code = 128 + stop.signum
    finally:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        kill_descendants()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
