"""Tethered children die with the process that started them, by prctl on Linux or by the watchdog elsewhere."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mindroom.homeserver import tether

# A child that says when it started and when SIGTERM stopped it; SIGWINCH is a probe it answers.
CHILD = """
import os, signal, sys, time
from pathlib import Path

def note(name, text):  # whole or not at all: the test reads as soon as the name exists
    Path(name + ".part").write_text(text)
    os.replace(name + ".part", name)

def stop(signum, frame):
    note("stopped", "SIGTERM")
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGWINCH, lambda signum, frame: note("probed", "yes"))
note("started", " ".join([str(os.getpid()), *sys.argv[1:]]))
if sys.argv[1:] == ["exit"]:
    sys.exit(3)
while True:
    time.sleep(0.05)
"""

# A parent that tethers CHILD (by the watchdog when told to) and then waits to be killed.
PARENT = """
import sys, time
from mindroom.homeserver import tether

if sys.argv[2] == "watchdog":
    tether._load_prctl = lambda: None
child = tether.spawn_module("child", ["tethered"], cwd=sys.argv[1])
print(child.pid, flush=True)
time.sleep(3600)
"""

_DEADLINE_S = 30.0  # generous: the suite runs on loaded machines; a passing run takes well under a second


def _wait_for_file(path: Path, timeout: float = _DEADLINE_S) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)
    return path.read_text()


def _child_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "child"
    folder.mkdir()
    (folder / "child.py").write_text(CHILD)
    return folder


def _thread_gone(native_id: int) -> bool:
    return not Path(f"/proc/self/task/{native_id}").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_tether_child_outlives_the_short_lived_thread_that_spawned_it(tmp_path):
    folder = _child_dir(tmp_path)
    spawned: list[subprocess.Popen[bytes]] = []
    spawner = threading.Thread(target=lambda: spawned.append(tether.spawn_module("child", [], cwd=folder)))
    spawner.start()
    spawner.join()
    child = spawned[0]
    try:
        _wait_for_file(folder / "started")
        deadline = time.monotonic() + _DEADLINE_S
        while not _thread_gone(spawner.native_id or 0):  # the kernel sends a thread's death signals before this
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # A SIGTERM already sent is handled before this probe (lower signal numbers first): an answered
        # probe without a stop means none came.
        child.send_signal(signal.SIGWINCH)
        _wait_for_file(folder / "probed")

        assert not (folder / "stopped").exists()
        assert child.poll() is None
    finally:
        child.kill()
        child.wait(10)


@pytest.mark.parametrize("mode", ["prctl", "watchdog"])
def test_tether_child_is_stopped_when_its_parent_is_killed(tmp_path, mode):
    if mode == "prctl" and not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    folder = _child_dir(tmp_path)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(folder), mode], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    child_pid = 0
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert _wait_for_file(folder / "started") == f"{child_pid} tethered"
        command = Path(f"/proc/{child_pid}/cmdline").read_bytes().split(b"\0")
        assert (b"mindroom.homeserver.tether" in command) == (mode == "watchdog")

        parent.send_signal(signal.SIGKILL)
        parent.wait(10)

        assert _wait_for_file(folder / "stopped") == "SIGTERM"
    finally:
        parent.kill()
        parent.wait(10)
        if child_pid and not (folder / "stopped").exists():
            os.kill(child_pid, signal.SIGKILL)


def test_tether_watchdog_passes_arguments_and_the_exit_code_through(tmp_path, monkeypatch):
    folder = _child_dir(tmp_path)
    monkeypatch.setattr(tether, "_load_prctl", lambda: None)

    child = tether.spawn_module("child", ["exit"], cwd=folder)

    assert child.wait(_DEADLINE_S) == 3
    assert _wait_for_file(folder / "started") == f"{child.pid} exit"


def test_tether_watchdog_does_not_start_the_module_when_the_parent_is_already_gone():
    not_my_parent = os.getpid()  # this process is not its own parent

    assert tether.main([str(not_my_parent), "this.module.would.fail.to.import"]) == 1
