"""Without bubblewrap, nothing a command starts outlives it, even when the command kills its own reaper.

The reaper (`mindroom.tool_system.sandbox.reaper`) kills what the command left when the command ends; a command
can kill the reaper first. Then the daemon's side still finds every process of the command: through a
cgroup made for the command where the machine lets the daemon make one, else as their subreaper.
"""

import asyncio
import ctypes
import os
import shutil

import pytest
from structlog.testing import capture_logs

from mindroom.config.main import ShellToolConfig
from mindroom.tool_system.sandbox import containment
from mindroom.tool_system.shell import run_command
from mindroom.tool_system.spec import ToolError
from tests.tool_system.test_shell_sandbox import gone_within, marker, needs_bwrap, running

__all__ = ["marker"]

needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid is not installed")
CGROUPS = containment.command_cgroups() is not None
MODES = pytest.mark.parametrize(
    "mode",
    [
        pytest.param("cgroup", marks=pytest.mark.skipif(not CGROUPS, reason="no cgroup v2 the daemon may manage")),
        "subreaper",
        pytest.param("bwrap", marks=needs_bwrap),
    ],
)


@pytest.fixture
def settings(mode, monkeypatch):
    """The shell settings of `mode`; `subreaper` is the fallback of a machine without a usable cgroup."""
    if mode == "subreaper":
        monkeypatch.setattr(containment, "command_cgroups", lambda: None)
    sandbox = "bwrap" if mode == "bwrap" else "none"
    return ShellToolConfig(allowed_commands=["sh"], sandbox=sandbox, timeout_s=60)


def detached_sleep(marker: str, *, quiet: bool = False) -> str:
    """Shell lines starting `sleep MARKER` in a session of its own, and going on once it runs (no fixed wait)."""
    output = " >/dev/null 2>&1 </dev/null" if quiet else ""
    return f'setsid sh -c "touch started; exec sleep {marker}"{output} & until [ -e started ]; do sleep 0.01; done'


@needs_setsid
@MODES
@pytest.mark.asyncio
async def test_shell_descendants_die_at_the_timeout_though_the_command_killed_its_reaper(tmp_path, settings, marker):
    # The detached sleep keeps the output pipe open, so the call runs into its timeout.
    command = f"sh -c '{detached_sleep(marker)}; kill -9 $PPID; touch reaper-killed; sleep 60'"

    with pytest.raises(ToolError, match="timed out"):
        await run_command(command, tmp_path / "ws", settings.model_copy(update={"timeout_s": 5}))

    assert (tmp_path / "ws" / "reaper-killed").exists(), "the timeout came before the command killed its reaper"
    assert gone_within(marker), f"a setsid grandchild survived: {running(marker)}"


@needs_setsid
@MODES
@pytest.mark.asyncio
async def test_shell_descendants_die_when_the_command_returns_after_killing_its_reaper(tmp_path, settings, marker):
    # Nothing holds the output: the call returns once the reaper is dead (after the sleep is in its own session).
    command = f"sh -c '{detached_sleep(marker, quiet=True)}; kill -9 $PPID'"

    await run_command(command, tmp_path / "ws", settings)

    assert gone_within(marker), f"a setsid grandchild survived: {running(marker)}"


@needs_setsid
@MODES
@pytest.mark.asyncio
async def test_shell_descendants_of_a_double_fork_die_though_the_reaper_is_gone(tmp_path, settings, marker):
    # The grandchild detaches twice and outlives both its parent and the reaper before anyone looks.
    command = (
        f'sh -c \'(setsid sh -c "sleep {marker} >/dev/null 2>&1 & touch started" &); '
        "until [ -e started ]; do sleep 0.01; done; kill -9 $PPID; exit 0'"
    )

    await run_command(command, tmp_path / "ws", settings)

    assert gone_within(marker), f"a double-forked grandchild survived: {running(marker)}"


@pytest.mark.skipif(not CGROUPS, reason="no cgroup v2 the daemon may manage")
@pytest.mark.asyncio
async def test_shell_command_cgroups_are_removed_once_the_command_ended(tmp_path, marker):
    settings = ShellToolConfig(allowed_commands=["sh"], sandbox="none", timeout_s=5)
    parent = containment.command_cgroups()

    # `&` returns once the sleep's process exists: it is in the command's cgroup before the reaper dies.
    await run_command(f"sh -c 'sleep {marker} >/dev/null 2>&1 & kill -9 $PPID'", tmp_path / "ws", settings)

    assert list(parent.glob(f"mindroom-shell-{os.getpid()}-*")) == []
    assert gone_within(marker)


def is_subreaper() -> bool:
    flag = ctypes.c_int()
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return bool(flag.value)


@needs_setsid
@pytest.mark.parametrize("mode", ["subreaper"])
@pytest.mark.asyncio
async def test_shell_fallback_sweep_spares_the_other_running_commands(tmp_path, settings, marker):
    # While one command escapes its reaper, another runs on; the daemon is a subreaper only meanwhile.
    waiting = "sh -c 'touch started; until [ -e go ]; do sleep 0.01; done; echo still-here'"
    slow = asyncio.ensure_future(run_command(waiting, tmp_path / "a", settings))
    assert await appeared(tmp_path / "a" / "started"), "the first command never started"
    during = is_subreaper()
    escape = f"sh -c '{detached_sleep(marker, quiet=True)}; kill -9 $PPID'"

    await run_command(escape, tmp_path / "b", settings)

    assert not slow.done()  # it was running all along the other command's escape and sweep
    await asyncio.to_thread((tmp_path / "a" / "go").touch)
    assert await slow == "exit code: 0\nstill-here\n"
    assert during and not is_subreaper()
    assert gone_within(marker)


async def appeared(path, seconds: float = 60.0) -> bool:
    """Whether the file `path` exists before `seconds` pass."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not await asyncio.to_thread(os.path.exists, path):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


@needs_setsid
@pytest.mark.asyncio
async def test_shell_without_a_usable_cgroup_falls_back_to_the_subreaper(tmp_path, marker, monkeypatch):
    monkeypatch.setattr(containment, "command_cgroups", lambda: tmp_path / "no-such-cgroup")
    monkeypatch.setattr(containment._Cgroups, "failed", False)
    settings = ShellToolConfig(allowed_commands=["sh"], sandbox="none", timeout_s=5)
    escape = f"sh -c '{detached_sleep(marker, quiet=True)}; kill -9 $PPID'"

    with capture_logs() as logs:
        await run_command(escape, tmp_path / "a", settings)
        await run_command("sh -c 'echo again'", tmp_path / "b", settings)

    assert gone_within(marker)
    held = [log for log in logs if log["event"] == "shell commands are held without cgroups"]
    assert len(held) == 1 and held[0]["log_level"] == "warning"


@pytest.mark.asyncio
async def test_shell_reaper_waiting_for_its_go_is_stopped_when_the_hold_fails(tmp_path, marker, monkeypatch):
    async def broken_start(self, reaper, stdin):
        raise RuntimeError("hold failed")

    monkeypatch.setattr(containment.CommandHold, "start", broken_start)
    settings = ShellToolConfig(allowed_commands=["sh"], sandbox="none", timeout_s=5)

    with pytest.raises(RuntimeError, match="hold failed"):
        await run_command(f"sh -c 'sleep {marker}'", tmp_path / "ws", settings)

    assert gone_within(marker), f"the waiting reaper survived: {running(marker)}"
