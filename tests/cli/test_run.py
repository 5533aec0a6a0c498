"""`mindroom run` around the orchestrator: environment, storage, errors, the ready banner; `python -m mindroom`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from mindroom.api.keys import dashboard_key
from mindroom.cli import app
from mindroom.cli.run import ApiBanner, _phase, ready_lines, recovery_key_lines
from mindroom.homeserver.embedded import HumanAccount
from mindroom.matrix.crypto.recovery_key import RecoveryKeys

runner = CliRunner()


def test_python_dash_m_mindroom_lists_every_command():
    result = subprocess.run([sys.executable, "-m", "mindroom", "--help"], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0
    for command in ("run", "config", "doctor", "plugins", "hooks", "chat"):
        assert command in result.stdout


def test_run_with_an_invalid_config_exits_2_naming_the_key(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  a:\n    display_name: A\n    unknown_key: 1\n")

    result = runner.invoke(app, ["run", "-c", str(config), "--storage-path", str(tmp_path / "data")])

    assert result.exit_code == 2
    assert "agents.a.unknown_key" in result.output


def test_run_without_homeserver_or_synapse_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv("MATRIX_HOMESERVER", raising=False)
    monkeypatch.setattr("mindroom.homeserver.embedded.synapse_installed", lambda: False)
    config = tmp_path / "config.yaml"
    config.write_text("models:\n  default: {provider: offline, id: offline}\nagents: {}\n")

    result = runner.invoke(app, ["run", "-c", str(config), "--storage-path", str(tmp_path / "data")])

    assert result.exit_code == 1
    assert f"pip install -e '{Path(__file__).resolve().parents[2]}[embedded]'" in result.output  # from any folder
    assert "MATRIX_HOMESERVER" in result.output


def test_ready_lines_show_rooms_agents_and_the_password_only_once(tmp_path):
    running = SimpleNamespace(
        directory=SimpleNamespace(room_ids={"lobby": "!abc:localhost"}),
        live=SimpleNamespace(config=SimpleNamespace(agents={"assistant": None}, teams={})),
    )
    server = SimpleNamespace(
        url="http://127.0.0.1:8008", base_dir=tmp_path / "homeserver", user_file=tmp_path / "u.json"
    )

    def session(created: bool):
        return SimpleNamespace(server=server, human=HumanAccount("@user:localhost", "pw-123456", created=created))

    first = ready_lines(running, session(True), tmp_path)
    later = ready_lines(running, session(False), tmp_path)

    assert first[0] == "MindRoom is ready. Rooms: lobby (!abc:localhost). Agents: assistant."
    assert any("pw-123456" in line and "shown once" in line for line in first)
    assert not any("pw-123456" in line for line in later)
    assert any("mindroom chat" in line for line in later)
    assert ready_lines(running, None, tmp_path) == [first[0]]


def test_run_offers_new_device_per_bot_and_repeatable():
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})

    assert result.exit_code == 0
    assert "--new-device" in result.output and "BOT" in result.output and "repeatable" in result.output


def test_recovery_key_lines_show_a_new_key_once_and_a_given_one_never(tmp_path):
    made = RecoveryKeys(tmp_path).load_or_create()

    first = recovery_key_lines(tmp_path)
    later = recovery_key_lines(tmp_path)

    assert made.text in first[0] and "shown once" in first[0] and str(tmp_path / "crypto" / "recovery-key") in first[0]
    assert "MINDROOM_RECOVERY_KEY_FILE" in first[1]
    assert later == []
    assert recovery_key_lines(tmp_path / "elsewhere") == []


def test_start_phases_name_what_the_daemon_waits_for():
    bots = {"router": SimpleNamespace(client=SimpleNamespace(has_synced=True))}
    bots["assistant"] = SimpleNamespace(client=SimpleNamespace(has_synced=False))
    config = SimpleNamespace(all_room_keys=lambda: ["lobby", "ops"])
    directory = SimpleNamespace(bot_user_ids={"router": "@r:hs"}, room_ids={})
    orchestrator = SimpleNamespace(running=None, bots=bots)

    assert _phase(orchestrator) == "Loading config and plugins"  # type: ignore[arg-type]
    orchestrator.running = SimpleNamespace(directory=directory, live=SimpleNamespace(config=config))
    assert _phase(orchestrator) == "Signing in 2 accounts (1/2)"  # type: ignore[arg-type]
    directory.bot_user_ids["assistant"] = "@a:hs"
    assert _phase(orchestrator) == "Joining 2 rooms (0/2)"  # type: ignore[arg-type]
    directory.room_ids.update(lobby="!l:hs", ops="!o:hs")
    assert _phase(orchestrator) == "Catching up with the homeserver (1/2)"  # type: ignore[arg-type]


def test_ready_lines_on_an_own_homeserver_show_the_generated_key_once_then_where_it_is_kept(tmp_path):
    running = SimpleNamespace(
        directory=SimpleNamespace(room_ids={}), live=SimpleNamespace(config=SimpleNamespace(agents={}, teams={}))
    )
    made = dashboard_key(tmp_path)

    first = ready_lines(running, None, tmp_path, ApiBanner("http://127.0.0.1:8765", made))
    later = ready_lines(running, None, tmp_path, ApiBanner("http://127.0.0.1:8765", dashboard_key(tmp_path)))
    operators = ready_lines(running, None, tmp_path, ApiBanner("http://127.0.0.1:8765"))

    assert f"Dashboard: http://127.0.0.1:8765/#key={made.value}" in first
    assert f"Dashboard key: {made.value} (shown once; kept in {tmp_path / 'dashboard_key'})" in first
    assert f"Dashboard key: kept in {tmp_path / 'dashboard_key'}" in later
    assert not any(made.value in line for line in later + operators)
    assert not any(line.startswith("Dashboard key:") for line in operators)  # MINDROOM_API_KEY is the operator's
