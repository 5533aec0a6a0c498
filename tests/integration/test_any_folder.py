"""`mindroom chat` from a folder that is not the deployment's reaches the running daemon's embedded homeserver
when told where the daemon is (`--storage-path`, `MINDROOM_CONFIG_PATH`, or `~/.mindroom` as MindRoom searches
it), and otherwise says where it looked and which flag to pass.

The daemon runs as a subprocess in its own folder, its data in `data/` as the `.env` beside its config says, with
no MATRIX_* or provider variables: it starts its own Synapse and the agent uses the offline model.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.support import PATIENCE_S
from tests.integration.test_quickstart import READY, Daemon

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
_SCRUBBED = ("MATRIX_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINDROOM_")
CONFIG = """\
models:
  default: {provider: offline, id: offline}
agents:
  assistant:
    display_name: Assistant
    rooms: [lobby]
rooms:
  lobby: {}
authorization:
  global_users: ["@user:localhost"]
room_defaults:
  invite_users: ["@user:localhost"]
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _chat(cwd: Path, env: dict[str, str], message: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mindroom", "chat", *flags, "-m", message, "--timeout", str(PATIENCE_S)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * PATIENCE_S,
    )


def test_chat_from_another_folder_reaches_the_running_daemon(tmp_path):
    deployment = tmp_path / "deployment"
    deployment.mkdir()
    (deployment / "config.yaml").write_text(CONFIG)
    (deployment / ".env").write_text("MINDROOM_STORAGE_PATH=data\n")  # relative: the config's folder
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED)}
    env["MINDROOM_API_PORT"] = str(_free_port())
    env["PYTHONPATH"] = str(ROOT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    linked_home = tmp_path / "linked-home"
    linked_home.mkdir()
    (linked_home / ".mindroom").symlink_to(deployment)
    there = {**env, "HOME": str(home)}

    daemon = Daemon(deployment, env, _free_port())
    try:
        daemon.wait_for(READY, timeout=2 * PATIENCE_S)
        assert (deployment / "data" / "homeserver" / "embedded.json").is_file()

        lost = _chat(elsewhere, there, "anyone?")
        by_option = _chat(elsewhere, there, "by option", "--storage-path", str(deployment / "data"))
        by_variable = _chat(elsewhere, {**there, "MINDROOM_CONFIG_PATH": str(deployment / "config.yaml")}, "by var")
        by_search = _chat(elsewhere, {**env, "HOME": str(linked_home)}, "by search")
    finally:
        assert daemon.stop() == 0, "\n".join(daemon.lines)

    assert lost.returncode == 2
    assert lost.stderr.startswith("no homeserver:")
    assert str(elsewhere / "mindroom_data") in lost.stderr
    assert str(elsewhere / "config.yaml") in lost.stderr and str(home / ".mindroom" / "config.yaml") in lost.stderr
    assert "--storage-path" in lost.stderr and "--config" in lost.stderr
    for answer, said in ((by_option, "by option"), (by_variable, "by var"), (by_search, "by search")):
        assert answer.returncode == 0, answer.stderr
        assert f"Assistant: (offline model) You said: {said}" in answer.stdout
    assert not (elsewhere / "mindroom_data").exists() and not (elsewhere / "data").exists()
