"""Where shell commands run: a bubblewrap sandbox when it works here, else a weaker fallback that says so.

bwrap: new user, pid, ipc, uts, cgroup and network namespaces (`--unshare-all`; the network is shared only
with `tools.shell.network`), `--die-with-parent`, `--new-session`, no capabilities, a clean environment
(PATH, LANG, HOME), run as the unprivileged user `agent` (`mindroom.tool_system.bubblewrap` says how, and
which files of `/etc` it sees). The system folders and `tools.shell.readonly_paths` are mounted read-only,
the agent's workspace read-write at its own path, and HOME, /tmp and /proc are the sandbox's own. Nothing
else of the host is there: not the data directory (a tmpfs covers it even below a visible folder), not the
daemon's process, its environment or its other children.

Fallback (`sandbox: none`, or `auto` without a working bwrap): the same clean environment and a fresh empty
HOME outside the workspace, and the command runs under `reaper.py`, which kills every descendant when the
command ends or is stopped; should the command kill the reaper, the daemon still finds them
(`containment.py`). Whatever the daemon's user can read or signal stays reachable; a warning says so once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mindroom.config.main import ShellToolConfig
from mindroom.logging_config import get_logger
from mindroom.tool_system.bubblewrap import SYSTEM_DIRS, bwrap_command, write_accounts
from mindroom.tool_system.spec import ToolError

__all__ = [
    "DEFAULT_PATH",
    "WEAKER_WITHOUT_SANDBOX",
    "Launch",
    "Sandbox",
    "choose_sandbox",
    "prepare_launch",
]

logger = get_logger(__name__)

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
WEAKER_WITHOUT_SANDBOX = (
    "commands can read every file the daemon's user can (the data directory and the homeserver's secrets too), "
    "read the daemon's /proc entries (its environment), signal its processes and use the network; they still "
    "get a clean environment and an empty private HOME, and everything they start is killed when they end"
)
_LANG = "C.UTF-8"
_PROBE_TIMEOUT_S = 10.0
_REAPER = Path(__file__).with_name("reaper.py")


class _Seen:
    """What this process learnt once: bwrap test runs by path, and the notices already logged."""

    probes: ClassVar[dict[str, str | None]] = {}
    logged: ClassVar[set[str]] = set()


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The confinement chosen for shell commands: bubblewrap at `bwrap`, or none (`reason` says why)."""

    bwrap: str | None
    reason: str = ""

    def roots(self, settings: ShellToolConfig) -> tuple[Path, ...]:
        """The host folders a command can see besides its workspace (everything, without a sandbox)."""
        if self.bwrap is None:
            return (Path("/"),)
        return tuple(Path(p) for p in (*SYSTEM_DIRS, *settings.readonly_paths))

    def search_path(self, host_path: str, settings: ShellToolConfig) -> str:
        """The PATH commands get: the daemon's, less the folders the sandbox does not show."""
        roots = self.roots(settings)
        shown = [
            entry for entry in host_path.split(os.pathsep) if entry.startswith("/") and _inside(Path(entry), roots)
        ]
        return os.pathsep.join(dict.fromkeys(shown)) or DEFAULT_PATH

    def shows(self, executable: str, settings: ShellToolConfig) -> bool:
        """Whether an executable at this host path exists at the same path inside the sandbox."""
        return _inside(Path(executable), self.roots(settings))


@dataclass(frozen=True, slots=True)
class Launch:
    """One command ready to start: its argv, environment and folder, how to stop it, and what to remove after.

    `scratch` is a host folder made for this command alone (the fallback's private HOME, or the sandbox's
    `passwd` and `group`), which the caller removes once it ended. `under_reaper`: the command runs under
    `reaper.py`, which waits for the caller's hold (`containment.CommandHold`) before it starts it.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    stop_signal: int
    scratch: Path | None = None
    under_reaper: bool = False


def _bwrap_argv(
    bwrap: str, settings: ShellToolConfig, workspace: Path, hidden: Sequence[Path], path: str, accounts: Path
) -> list[str]:
    return bwrap_command(
        bwrap,
        path=path,
        lang=_LANG,
        accounts=accounts,
        network=settings.network,
        readonly=settings.readonly_paths,
        hidden=hidden,
        on_top=((workspace, True),),
        chdir=workspace,
    )


async def _probe(bwrap: str) -> str | None:
    """None if a bwrap sandbox like the real one starts and runs `true` here, else what went wrong."""
    true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="mindroom-probe-") as folder:
        accounts = write_accounts(Path(folder))
        argv = [*_bwrap_argv(bwrap, ShellToolConfig(), Path(folder), (), DEFAULT_PATH, accounts), "--", true]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env={"PATH": DEFAULT_PATH, "LANG": _LANG},
            )
        except OSError as exc:
            return f"cannot start {bwrap}: {exc.strerror}"
        try:
            async with asyncio.timeout(_PROBE_TIMEOUT_S):
                output, _ = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            return f"a test run of {bwrap} did not finish within {_PROBE_TIMEOUT_S:g} s"
    if process.returncode != 0:
        return f"a test run of {bwrap} failed: {output.decode('utf-8', errors='replace').strip()[:300]}"
    return None


def _once(key: str) -> bool:
    if key in _Seen.logged:
        return False
    _Seen.logged.add(key)
    return True


async def choose_sandbox(settings: ShellToolConfig, host_path: str) -> Sandbox:
    """The sandbox `tools.shell.sandbox` asks for, tested once per process; `ToolError` if `bwrap` cannot run."""
    if settings.sandbox == "none":
        reason = "tools.shell.sandbox is none"
        if _once(reason):
            logger.warning("shell commands run without a sandbox", reason=reason, weaker=WEAKER_WITHOUT_SANDBOX)
        return Sandbox(None, reason)
    bwrap = shutil.which("bwrap", path=host_path)
    if bwrap is None:
        problem: str | None = "bwrap (bubblewrap) is not installed"
    else:
        if bwrap not in _Seen.probes:
            _Seen.probes[bwrap] = await _probe(bwrap)
        problem = _Seen.probes[bwrap]
    if problem is None:
        assert bwrap is not None
        if _once(f"bwrap:{bwrap}"):
            logger.info("shell commands run in a bubblewrap sandbox", bwrap=bwrap)
        return Sandbox(bwrap)
    if settings.sandbox == "bwrap":
        if _once(f"refused:{problem}"):
            logger.error("shell commands refused: the configured sandbox is not available", reason=problem)
        raise ToolError(f"commands are not run: tools.shell.sandbox is bwrap, but {problem}")
    if _once(f"auto:{problem}"):
        logger.warning("shell commands run without a sandbox", reason=problem, weaker=WEAKER_WITHOUT_SANDBOX)
    return Sandbox(None, problem)


def prepare_launch(
    sandbox: Sandbox,
    settings: ShellToolConfig,
    argv: Sequence[str],
    workspace: Path,
    hidden: Sequence[Path],
    search_path: str,
) -> Launch:
    """How to start `argv` (its executable already resolved) in `workspace` under `sandbox`.

    This makes a folder for the command (`Launch.scratch`): the caller removes it afterwards.
    """
    workspace = workspace.resolve()
    if sandbox.bwrap is not None:
        accounts = write_accounts(Path(tempfile.mkdtemp(prefix="mindroom-sandbox-")))
        command = [*_bwrap_argv(sandbox.bwrap, settings, workspace, hidden, search_path, accounts), "--", *argv]
        return Launch(tuple(command), {"PATH": search_path, "LANG": _LANG}, workspace, signal.SIGKILL, accounts)
    home = Path(tempfile.mkdtemp(prefix="mindroom-home-"))
    command = [sys.executable, "-I", "-S", str(_REAPER), str(os.getpid()), *argv]
    env = {"PATH": search_path, "LANG": _LANG, "HOME": str(home)}
    # SIGTERM, not SIGKILL: the reaper needs the moment to kill what the command started.
    return Launch(tuple(command), env, workspace, signal.SIGTERM, home, under_reaper=True)
