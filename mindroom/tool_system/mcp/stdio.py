"""A stdio MCP server started like a shell command: sandboxed, with a scrubbed environment, killed whole on stop.

In bubblewrap (`tools.mcp.sandbox`, tested as for the shell tool, refused when it cannot run) the server
runs as the sandbox user with a private HOME and /tmp, no view of the data directory or the daemon's
processes, a network of its own (`tools.mcp.network`, through slirp4netns, without the host's loopback
services), and read-only: the system folders, `tools.mcp.readonly_paths`, and the virtual environment
its command lives in. Its working folder (`cwd`, else a folder of its own in the data directory) is
writable. With `sandbox: none` it runs under the reaper with a fresh HOME, and the daemon keeps hold of
everything it starts (`containment.py`).

Its environment holds PATH, LANG and HOME, and the variables its config names (`env`), nothing of the
daemon's; those values go to bubblewrap through its environment, not its command line, so no process
listing shows them. Stopping closes its stdin, waits briefly, then kills it and everything it started.
What it writes to stderr is kept (the last few KB) to say why it failed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from mindroom.config.environment import process_environ
from mindroom.config.main import ShellToolConfig
from mindroom.config.mcp import MCPSandboxConfig
from mindroom.tool_system.sandbox.containment import CommandHold
from mindroom.tool_system.sandbox.launch import DEFAULT_PATH, Launch, choose_sandbox, prepare_launch, start_launch
from mindroom.tool_system.sandbox.network import SandboxNetwork
from mindroom.tool_system.spec import ToolError

__all__ = ["STDERR_KEPT", "StdioServerSpec", "StdioSession", "start_stdio_server"]

STDERR_KEPT = 4096
_STOP_GRACE_S = 2.0
_SECRET_FREE = ("PATH", "LANG", "HOME")


@dataclass(frozen=True, slots=True)
class StdioServerSpec:
    """What to start: the command line, its variables, its working folder, and the sandbox settings."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    folder: Path
    settings: MCPSandboxConfig
    hidden: tuple[Path, ...] = ()
    writable_cwd: bool = True


@dataclass(slots=True)
class StdioSession:
    """A started server: the process, its stderr tail, and what to release once it ended."""

    process: asyncio.subprocess.Process
    launch: Launch
    hold: CommandHold | None
    network: SandboxNetwork | None = None
    stderr: collections.deque[bytes] = field(default_factory=lambda: collections.deque(maxlen=64))

    def stderr_tail(self) -> str:
        """The last bytes the server wrote to stderr, as text."""
        return b"".join(self.stderr)[-STDERR_KEPT:].decode("utf-8", errors="replace").strip()


def _executable(command: str, host_path: str) -> str:
    if os.sep in command:
        path = Path(command)
        if not path.is_file():
            raise ToolError(f"{command!r} does not exist")
        return str(path.resolve())
    found = shutil.which(command, path=host_path)
    if found is None:
        raise ToolError(f"{command!r} is not installed (not on the daemon's PATH)")
    return found


def _environment_roots(executable: str) -> list[str]:
    """The Python virtual environment `executable` belongs to (and its base interpreter's prefix), if any."""
    root = Path(executable).parent.parent
    config = root / "pyvenv.cfg"
    if not config.is_file():
        return []
    roots = [str(root)]
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            roots.append(str(Path(value.strip()).parent))
    return roots


def _shell_settings(settings: MCPSandboxConfig, extra: Sequence[str]) -> ShellToolConfig:
    readonly = list(dict.fromkeys([*settings.readonly_paths, *extra]))
    return ShellToolConfig(sandbox=settings.sandbox, network=settings.network, readonly_paths=readonly)


def _without_argv_environment(launch: Launch, env: Mapping[str, str]) -> Launch:
    """bwrap keeps the environment it is started with when not told `--clearenv`: the values go there."""
    argv = list(launch.argv)
    if "--clearenv" not in argv:
        return replace(launch, env={**launch.env, **env})
    end = argv.index("--")
    options, rest = argv[:end], argv[end:]
    kept: list[str] = []
    index = 0
    while index < len(options):
        if options[index] == "--clearenv":
            index += 1
        elif options[index] == "--setenv" and options[index + 1] in _SECRET_FREE:
            index += 3
        else:
            kept.append(options[index])
            index += 1
    from mindroom.tool_system.sandbox.bubblewrap import SANDBOX_HOME

    return replace(launch, argv=(*kept, *rest), env={**launch.env, "HOME": SANDBOX_HOME, **env})


async def _prepare(spec: StdioServerSpec) -> tuple[Launch, tuple[int, int] | None]:
    """How to start the server, and for the reaper the pipe (read end, write end) of its go-ahead."""
    host_path = process_environ().get("PATH") or DEFAULT_PATH
    executable = _executable(spec.command, host_path)
    shell = _shell_settings(spec.settings, _environment_roots(executable))
    sandbox = await choose_sandbox(shell, host_path, "tools.mcp")
    if sandbox.bwrap is not None and not sandbox.shows(executable, shell):
        raise ToolError(f"{executable} is not inside the sandbox: add its folder to tools.mcp.readonly_paths")
    os.makedirs(spec.folder, mode=0o700, exist_ok=True)
    search_path = sandbox.search_path(host_path, shell)
    launch = prepare_launch(sandbox, shell, [executable, *spec.args], spec.folder, spec.hidden, search_path)
    launch = _without_argv_environment(launch, spec.env)
    if not launch.under_reaper:
        return launch, None
    read_end, write_end = os.pipe()
    # The reaper reads the go-ahead on its own pipe: the server keeps stdin for the protocol.
    argv = list(launch.argv)
    reaper_at = next(index for index, arg in enumerate(argv) if arg.endswith("reaper.py"))
    argv[reaper_at + 1 : reaper_at + 1] = ["--go-fd", str(read_end)]
    return replace(launch, argv=tuple(argv)), (read_end, write_end)


async def _drain(stream: asyncio.StreamReader, sink: collections.deque[bytes]) -> None:
    with contextlib.suppress(Exception):
        while chunk := await stream.read(1024):
            sink.append(chunk)


@asynccontextmanager
async def start_stdio_server(spec: StdioServerSpec) -> AsyncIterator[StdioSession]:
    """Start the server; on leaving, stop it and everything it started (`ToolError` when it cannot start)."""
    launch, pipe = await _prepare(spec)
    read_end, write_end = pipe if pipe is not None else (None, None)
    hold = CommandHold() if launch.under_reaper else None
    try:
        process, network = await start_launch(
            launch,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=16 * 1024 * 1024,
            pass_fds=(read_end,) if read_end is not None else (),
        )
    except BaseException as exc:
        if write_end is not None:
            os.close(write_end)
        if hold is not None:
            await hold.release()
        if launch.scratch is not None:
            await asyncio.to_thread(shutil.rmtree, launch.scratch, True)
        if isinstance(exc, OSError):
            raise ToolError(f"cannot start {spec.command!r}: {exc.strerror}") from None
        raise
    finally:
        if read_end is not None:
            os.close(read_end)
    session = StdioSession(process, launch, hold, network)
    assert process.stderr is not None
    drain = asyncio.create_task(_drain(process.stderr, session.stderr))
    try:
        if hold is not None and write_end is not None:
            await hold.start(process.pid, write_end)
        yield session
    finally:
        await asyncio.shield(_stop(session))
        drain.cancel()
        await asyncio.gather(drain, return_exceptions=True)
        if launch.scratch is not None:
            await asyncio.to_thread(shutil.rmtree, launch.scratch, True)


async def _exited(process: asyncio.subprocess.Process, limit_s: float) -> bool:
    deadline = asyncio.get_running_loop().time() + limit_s
    while process.returncode is None:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _stop(session: StdioSession) -> None:
    process, launch = session.process, session.launch
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    if not await _exited(process, _STOP_GRACE_S):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(launch.stop_signal)
        if not await _exited(process, _STOP_GRACE_S):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await _exited(process, _STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left in its process group
    if session.hold is not None:
        await session.hold.release()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), _STOP_GRACE_S)
    if session.network is not None:
        await session.network.close()
