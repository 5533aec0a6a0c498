"""Where shell commands and stdio MCP servers run: a bubblewrap sandbox, refused when it cannot run here.

bwrap: new user, pid, ipc, uts, cgroup and network namespaces (`--unshare-all`), `--die-with-parent`,
`--new-session`, no capabilities, a clean environment (PATH, LANG, HOME), run as the unprivileged user
`agent` (`mindroom.tool_system.sandbox.bubblewrap` says how, and which files of `/etc` it sees). The system folders
and `readonly_paths` are mounted read-only, the workspace read-write at its own path, and HOME, /tmp and
/proc are the sandbox's own. Nothing else of the host is there: not the data directory (a tmpfs covers it
even below a visible folder), not the daemon's process, its environment or its other children.

The network (`network`): `false` none; `true` a namespace of its own linked to the outside by slirp4netns
(`network.py`), where the host's loopback services are out of reach; `host` the host's own network
(`--share-net`), loopback services included, said once as weaker. Without slirp4netns, `true` is refused.

`sandbox: auto` and `bwrap` both refuse to run anything when bubblewrap is missing or fails its test run;
only `sandbox: none`, written by the operator, runs without it: the same clean environment and a fresh
empty HOME outside the workspace, under `reaper.py`, which kills every descendant when the command ends or
is stopped; should the command kill the reaper, the daemon still finds them (`containment.py`). Whatever
the daemon's user can read or signal stays reachable; a warning says so once.
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
from typing import Any, ClassVar

from mindroom.config.main import ShellToolConfig
from mindroom.logging_config import get_logger
from mindroom.tool_system.sandbox.bubblewrap import SYSTEM_DIRS, bwrap_command, write_etc
from mindroom.tool_system.sandbox.network import INSTALL_SLIRP, SandboxNetwork, start_with_network
from mindroom.tool_system.spec import ToolError

__all__ = [
    "DEFAULT_PATH",
    "INSTALL_BWRAP",
    "WEAKER_HOST_NETWORK",
    "WEAKER_WITHOUT_SANDBOX",
    "Launch",
    "Sandbox",
    "choose_sandbox",
    "prepare_launch",
    "start_launch",
]

logger = get_logger(__name__)

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
WEAKER_WITHOUT_SANDBOX = (
    "commands can read every file the daemon's user can (the data directory and the homeserver's secrets too), "
    "read the daemon's /proc entries (its environment), signal its processes and use the network; they still "
    "get a clean environment and an empty private HOME, and everything they start is killed when they end"
)
WEAKER_HOST_NETWORK = (
    "sandboxed processes share the host's network: they reach every service listening on its loopback (the "
    "daemon's API, the embedded homeserver, a local database) and its abstract Unix sockets"
)
INSTALL_BWRAP = "install the bubblewrap package (apt-get install bubblewrap; dnf or pacman install bubblewrap)"
_SUBJECTS = {"tools.shell": "shell commands", "tools.mcp": "stdio MCP servers"}
_LANG = "C.UTF-8"
_PROBE_TIMEOUT_S = 10.0
_REAPER = Path(__file__).with_name("reaper.py")


class _Seen:
    """What this process learnt once: test runs by bwrap (and slirp4netns) path, and the notices already logged."""

    probes: ClassVar[dict[tuple[str, str | None], str | None]] = {}
    logged: ClassVar[set[str]] = set()


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The confinement chosen: bubblewrap at `bwrap`, or none (`reason` says why).

    `slirp` is slirp4netns, for a sandbox with a network of its own (`network: true`).
    """

    bwrap: str | None
    reason: str = ""
    slirp: str | None = None

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
    own files of `/etc`), which the caller removes once it ended. `under_reaper`: the command runs under
    `reaper.py`, which waits for the caller's hold (`containment.CommandHold`) before it starts it.
    `slirp`: slirp4netns links the sandbox's network (`start_launch` starts it).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    stop_signal: int
    scratch: Path | None = None
    under_reaper: bool = False
    slirp: str | None = None


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


async def _probe(bwrap: str, slirp: str | None) -> str | None:
    """None if a sandbox like the real one (with a network of its own, with `slirp`) runs `true`, else why not."""
    true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="mindroom-probe-") as folder:
        settings = ShellToolConfig(network=slirp is not None)
        launch = prepare_launch(Sandbox(bwrap, slirp=slirp), settings, [true], Path(folder), (), DEFAULT_PATH)
        assert launch.scratch is not None
        try:
            output, code = await _run_probe(launch)
        except OSError as exc:
            return f"cannot start {bwrap}: {exc.strerror}"
        except ToolError as exc:
            return str(exc)
        finally:
            shutil.rmtree(launch.scratch, ignore_errors=True)
    if code is None:
        return f"a test run of {bwrap} did not finish within {_PROBE_TIMEOUT_S:g} s"
    if code != 0:
        return f"a test run of {bwrap} failed: {output.decode('utf-8', errors='replace').strip()[:300]}"
    return None


async def _run_probe(launch: Launch) -> tuple[bytes, int | None]:
    """The output and exit code of a probe's run (no code: it was stopped at the probe's time limit)."""
    pipes: dict[str, Any] = {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.STDOUT}
    process, network = await start_launch(launch, stdin=asyncio.subprocess.DEVNULL, **pipes)
    try:
        async with asyncio.timeout(_PROBE_TIMEOUT_S):
            output, _ = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return b"", None
    finally:
        if network is not None:
            await network.close()
    return output, process.returncode


def _once(key: str) -> bool:
    if key in _Seen.logged:
        return False
    _Seen.logged.add(key)
    return True


async def _tested(bwrap: str, slirp: str | None) -> str | None:
    """What keeps this sandbox from running here (tested once per process), or None."""
    if (bwrap, slirp) not in _Seen.probes:
        _Seen.probes[bwrap, slirp] = await _probe(bwrap, slirp)
    return _Seen.probes[bwrap, slirp]


def _refusal(key: str, problem: str, fix: str) -> ToolError:
    if _once(f"refused:{key}:{problem}"):
        logger.error("sandboxed tools refused: their sandbox cannot run here", setting=key, reason=problem, fix=fix)
    return ToolError(f"{_SUBJECTS.get(key, 'commands')} are not run: {problem}; {fix}")


async def choose_sandbox(settings: ShellToolConfig, host_path: str, key: str = "tools.shell") -> Sandbox:
    """The sandbox `<key>.sandbox` and `<key>.network` ask for, tested once per process; `ToolError` if it cannot run.

    Only `sandbox: none` runs without bubblewrap; `network: true` needs slirp4netns.
    """
    if settings.sandbox == "none":
        reason = f"{key}.sandbox is none"
        if _once(reason):
            logger.warning("tools run without a sandbox", setting=key, reason=reason, weaker=WEAKER_WITHOUT_SANDBOX)
        return Sandbox(None, reason)
    bwrap = shutil.which("bwrap", path=host_path)
    problem = "bwrap (bubblewrap) is not installed" if bwrap is None else await _tested(bwrap, None)
    if problem is not None or bwrap is None:
        fix = f"{INSTALL_BWRAP}, or set {key}.sandbox: none to run them without a sandbox (weaker)"
        raise _refusal(key, f"{key}.sandbox is {settings.sandbox}, but {problem}", fix)
    slirp = None
    if settings.network is True:
        slirp = shutil.which("slirp4netns", path=host_path)
        problem = "slirp4netns is not installed" if slirp is None else await _tested(bwrap, slirp)
        if problem is not None:
            fix = (
                f"{INSTALL_SLIRP}, or set {key}.network: host to share the host's network, its loopback "
                "services included (weaker), or false"
            )
            raise _refusal(key, f"{key}.network is true, but {problem}", fix)
    elif settings.network == "host" and _once(f"host:{key}"):
        logger.warning("sandboxed tools share the host's network", setting=key, weaker=WEAKER_HOST_NETWORK)
    if _once(f"bwrap:{key}:{bwrap}:{slirp}"):
        logger.info("tools run in a bubblewrap sandbox", setting=key, bwrap=bwrap, slirp4netns=slirp)
    return Sandbox(bwrap, slirp=slirp)


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
        etc = write_etc(Path(tempfile.mkdtemp(prefix="mindroom-sandbox-")))
        command = [*_bwrap_argv(sandbox.bwrap, settings, workspace, hidden, search_path, etc), "--", *argv]
        slirp = sandbox.slirp if settings.network is True else None
        env = {"PATH": search_path, "LANG": _LANG}
        return Launch(tuple(command), env, workspace, signal.SIGKILL, etc, slirp=slirp)
    home = Path(tempfile.mkdtemp(prefix="mindroom-home-"))
    command = [sys.executable, "-I", "-S", str(_REAPER), str(os.getpid()), *argv]
    env = {"PATH": search_path, "LANG": _LANG, "HOME": str(home)}
    # SIGTERM, not SIGKILL: the reaper needs the moment to kill what the command started.
    return Launch(tuple(command), env, workspace, signal.SIGTERM, home, under_reaper=True)


async def start_launch(launch: Launch, **options: Any) -> tuple[asyncio.subprocess.Process, SandboxNetwork | None]:
    """Start `launch` (these are `create_subprocess_exec` options); a sandbox's own network is up before it runs.

    The caller closes the network (`SandboxNetwork.close`) once the process ended.
    """
    options = {"cwd": launch.cwd, "env": dict(launch.env), **options}
    if launch.slirp is None:
        return await asyncio.create_subprocess_exec(*launch.argv, **options), None
    assert launch.scratch is not None
    return await start_with_network(launch.argv, launch.slirp, launch.scratch / "slirp4netns.log", **options)
