"""A sandbox's own network: slirp4netns links its network namespace to the outside, never to the host's loopback.

A bubblewrap sandbox that may use the network keeps a network namespace of its own (`--unshare-net`, no
`--share-net`), so the host's loopback services (the daemon's API, the embedded homeserver, a local
database) and its abstract Unix sockets are not there. slirp4netns gives that namespace a `tap0` device
routed to the outside through the daemon's user-mode TCP/IP stack, with `--disable-host-loopback`: the
gateway 10.0.2.2, which would lead to the host's 127.0.0.1, refuses. The sandbox's own `lo` stays its own.
Names resolve through slirp's forwarder 10.0.2.3 (the sandbox's `resolv.conf` says so).

The order: bubblewrap starts with `--info-fd` (it writes its child's pid there) and `--block-fd` (the child
waits before it runs the command until that pipe has data); once the child has set up its loopback,
slirp4netns is started on the child's namespace and says when it is ready on `--ready-fd`; then the block
pipe is written and the command runs, the network already up. When the sandbox ends the daemon kills
slirp4netns; should the daemon die first, the kernel closes the daemon's end of slirp4netns's `--exit-fd`
pipe, and slirp4netns ends too: it outlives neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mindroom.tool_system.spec import ToolError

__all__ = ["GATEWAY", "INSTALL_SLIRP", "RESOLVER", "SandboxNetwork", "start_with_network"]

GATEWAY = "10.0.2.2"
"""slirp's address for the host, which would lead to its loopback: refused here."""
RESOLVER = "10.0.2.3"
"""slirp's DNS forwarder, the sandbox's only name server."""
INSTALL_SLIRP = "install slirp4netns (apt-get install slirp4netns; dnf or pacman install slirp4netns)"
_NS_GET_USERNS = 0xB701  # ioctl on a namespace: a descriptor of the user namespace owning it (Linux 4.9)
_START_LIMIT_S = 10.0
_LOG_KEPT = 300


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await waiter
    finally:
        loop.remove_reader(fd)


async def _read(fd: int) -> bytes:
    """The next bytes of the non-blocking pipe `fd` (b"" once every writer closed it), without blocking the loop."""
    while True:
        try:
            return os.read(fd, 4096)
        except BlockingIOError:
            await _readable(fd)


def _last_lines(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-3:])[-_LOG_KEPT:]


async def _child_pid(fd: int) -> int:
    """The pid bubblewrap reports on its `--info-fd` for the process that will run the command."""
    data = b""
    while chunk := await _read(fd):
        data += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    raise ToolError("bubblewrap ended before it started the sandbox")


def _loopback_up(pid: int) -> bool:
    """Whether the loopback of process `pid`'s network namespace is up (with 127.0.0.1 in its routes).

    Raises `OSError` once the process is gone.
    """
    with open(f"/proc/{pid}/net/fib_trie", encoding="ascii", errors="replace") as routes:
        return "127.0.0.1" in routes.read()


async def _loopback_set_up(pid: int) -> None:
    """Wait until bubblewrap has set up the sandbox's loopback.

    slirp4netns brings `lo` up too (and the kernel then gives it 127.0.0.1): started earlier, it races
    bubblewrap, which then fails to add that address and gives up.
    """
    while True:
        try:
            if _loopback_up(pid):
                return
        except OSError:
            raise ToolError("bubblewrap ended before it set up the sandbox") from None
        await asyncio.sleep(0.001)


def _namespaces(pid: int) -> tuple[int, int]:
    """Open the network namespace of process `pid` and the user namespace that owns it.

    Not `/proc/PID/ns/user`: bubblewrap moves its child into a nested user namespace before it waits, and
    that one holds no capability over the network namespace, so slirp4netns could not enter it from there.
    """
    netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        userns = fcntl.ioctl(netns, _NS_GET_USERNS)
    except OSError:
        os.close(netns)
        raise
    os.set_inheritable(userns, False)
    return netns, userns


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    return read_end, write_end


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class SandboxNetwork:
    """The slirp4netns process serving one sandbox's network namespace; `close()` ends it."""

    def __init__(self, process: asyncio.subprocess.Process, exit_fd: int) -> None:
        self.process = process
        self._exit_fd: int | None = exit_fd

    @classmethod
    async def attach(cls, slirp: str, pid: int, log: Path) -> SandboxNetwork:
        """Start slirp4netns on the network namespace of process `pid` and return once the link is up.

        What slirp4netns prints goes to `log`; `ToolError` (with its last lines) when it cannot start.
        """
        try:
            netns, userns = _namespaces(pid)
        except OSError as exc:
            raise ToolError(f"cannot reach the sandbox's network namespace: {exc.strerror}") from None
        ready_read, ready_write = _pipe()
        exit_read, exit_write = os.pipe()
        argv = [slirp, "--configure", "--mtu=65520", "--disable-host-loopback"]
        argv += ["--ready-fd", str(ready_write), "--exit-fd", str(exit_read), "--netns-type=path"]
        argv += ["--userns-path", f"/proc/self/fd/{userns}", f"/proc/self/fd/{netns}", "tap0"]
        try:
            with log.open("ab") as output:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=output,
                    stderr=output,
                    pass_fds=(ready_write, exit_read, netns, userns),
                    start_new_session=True,  # a terminal's Ctrl-C is the daemon's to handle, not the link's
                )
        except OSError as exc:
            _close(ready_read, exit_write)
            raise ToolError(f"cannot start {slirp}: {exc.strerror}") from None
        finally:
            _close(ready_write, exit_read, netns, userns)
        network = cls(process, exit_write)
        try:
            async with asyncio.timeout(_START_LIMIT_S):
                ready = await _read(ready_read)
        except BaseException:
            await network.close()
            raise
        finally:
            _close(ready_read)
        if ready != b"1":
            await network.close()
            said = _last_lines(log)
            raise ToolError(f"slirp4netns could not give the sandbox its network: {said or 'no output'}")
        return network

    async def close(self) -> None:
        """End slirp4netns and reap it (the namespace it served is gone or going, so nothing is lost)."""
        # Killed, not only told through its exit pipe, which it notices some milliseconds later; most of the
        # wait that remains is the kernel removing its tap device.
        _close(self._exit_fd)
        self._exit_fd = None
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self.process.wait()


async def start_with_network(
    argv: Sequence[str], slirp: str, log: Path, **options: Any
) -> tuple[asyncio.subprocess.Process, SandboxNetwork]:
    """Start bubblewrap (`argv`, options of `create_subprocess_exec`) with its network up before the command runs.

    `ToolError` when the network cannot be set up; bubblewrap is killed then, the command never ran.
    """
    info_read, info_write = _pipe()
    block_read, block_write = os.pipe()
    held = [argv[0], "--info-fd", str(info_write), "--block-fd", str(block_read), *argv[1:]]
    passed = (info_write, block_read, *options.pop("pass_fds", ()))
    try:
        process = await asyncio.create_subprocess_exec(*held, pass_fds=passed, **options)
    except BaseException:
        _close(info_read, block_write)
        raise
    finally:
        _close(info_write, block_read)
    try:
        async with asyncio.timeout(_START_LIMIT_S):
            pid = await _child_pid(info_read)
            await _loopback_set_up(pid)
        network = await SandboxNetwork.attach(slirp, pid, log)
    except BaseException as exc:
        _close(block_write)
        await _kill(process)
        if isinstance(exc, TimeoutError):
            raise ToolError(f"the sandbox did not start within {_START_LIMIT_S:g} s") from None
        raise
    finally:
        _close(info_read)
    # Should bubblewrap have died meanwhile, the write finds no reader: the caller sees it ended.
    with contextlib.suppress(OSError):
        os.write(block_write, b"1")
    _close(block_write)
    return process, network


async def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill bubblewrap, held before it ran anything (its child dies with it: `--die-with-parent`)."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGKILL)
    await process.wait()
