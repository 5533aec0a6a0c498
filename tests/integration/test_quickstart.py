"""The README's first command, end to end: `mindroom run` on the embedded homeserver, `mindroom chat` answers.

The daemon runs as a subprocess from a copy of the repo's `config.yaml` and `plugins/`, with no MATRIX_*
or provider variables, so it starts its own Synapse and agents use the offline model.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mindroom.homeserver.tether import spawn_module
from tests.integration.support import PATIENCE_S

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
READY = "MindRoom is ready."
_SCRUBBED = ("MATRIX_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINDROOM_")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Daemon:
    """`python -m mindroom run` in a directory, its output collected line by line."""

    def __init__(self, workdir: Path, env: dict[str, str], port: int) -> None:
        self.lines: list[str] = []
        self.started = time.monotonic()
        # Tethered to the test process, so a killed test run leaves neither it nor its Synapse behind.
        self.process = spawn_module(
            "mindroom",
            ["run", "--homeserver-port", str(port)],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, prefix: str, timeout: float = PATIENCE_S) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line starting {prefix!r}; output:\n" + "\n".join(self.lines))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=PATIENCE_S)
        self._reader.join(timeout=5)
        return code


@pytest.fixture
def quickstart(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    workdir = tmp_path / "fresh-clone"
    workdir.mkdir()
    shutil.copy(ROOT / "config.yaml", workdir / "config.yaml")
    shutil.copytree(ROOT / "plugins", workdir / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED)}
    env["MINDROOM_STORAGE_PATH"] = str(tmp_path / "data")
    env["MINDROOM_API_PORT"] = str(_free_port())  # the README's run serves its API too, on a port of its own here
    env["PYTHONPATH"] = str(ROOT)
    return workdir, env


def _chat(workdir: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mindroom", "chat", "-m", message, "--timeout", str(PATIENCE_S)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * PATIENCE_S,
    )


def test_quickstart_run_embedded_then_chat_gets_the_offline_answer(quickstart, tmp_path):
    workdir, env = quickstart
    port = _free_port()
    daemon = Daemon(workdir, env, port)
    try:
        ready = daemon.wait_for(READY, timeout=2 * PATIENCE_S)
        first_start_s = time.monotonic() - daemon.started
        assert "lobby" in ready and "assistant" in ready and "researcher" in ready
        assert daemon.wait_for("Homeserver:").startswith(f"Homeserver: http://127.0.0.1:{port}")
        password_line = daemon.wait_for("Password:")
        assert "shown once" in password_line
        assert "shown once" in daemon.wait_for("Dashboard key:")
        assert any("offline model" in line and "OPENAI_API_KEY" in line for line in daemon.lines)

        answer = _chat(workdir, env, "hello from the quickstart")
        assert answer.returncode == 0, answer.stderr + "\n".join(daemon.lines)
        assert "Assistant: (offline model) You said: hello from the quickstart" in answer.stdout
    finally:
        code = daemon.stop()
    assert code == 0, "\n".join(daemon.lines)
    data = tmp_path / "data"
    for private in ("homeserver/embedded.json", "homeserver/user.json", "homeserver/homeserver.yaml", "dashboard_key"):
        assert (data / private).stat().st_mode & 0o777 == 0o600, private
    user = json.loads((data / "homeserver" / "user.json").read_text())
    assert user["user_id"] == "@user:localhost"
    assert user["password"] not in "\n".join(line for line in daemon.lines if line.startswith("{"))  # logs redact it

    again = Daemon(workdir, env, port)
    try:
        again.wait_for(READY, timeout=2 * PATIENCE_S)
        second_start_s = time.monotonic() - again.started
        assert again.wait_for("Password:") == f"Password: kept in {data / 'homeserver' / 'user.json'}"
        assert again.wait_for("Dashboard key:") == f"Dashboard key: kept in {data / 'dashboard_key'}"
        answer = _chat(workdir, env, "still there?")
        assert "(offline model) You said: still there?" in answer.stdout
    finally:
        assert again.stop() == 0
    print(f"cold start: first run {first_start_s:.1f} s, second run {second_start_s:.1f} s")
