"""`mindroom config validate`: valid files exit 0; invalid ones name file, key path and line, and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from mindroom.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _validate(config: Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["config", "validate", "-c", str(config)])
    return result.exit_code, result.stdout, result.stderr


def test_config_validate_a_valid_file_exits_0_and_counts_agents_and_plugins(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "agents:\n  helper: {display_name: Helper}\n  scribe: {display_name: Scribe}\nplugins:\n  - ./plugins/x\n"
    )

    code, out, err = _validate(config)

    assert code == 0, err
    assert out.strip() == f"{config}: valid (2 agents, 1 plugin entries)"
    assert err == ""


def test_config_validate_a_bad_key_exits_2_naming_file_key_path_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper:\n    display_name: Helper\n    temprature: 0.2\n")

    code, out, err = _validate(config)

    assert code == 2
    assert out == ""
    assert f"invalid config {config}" in err
    assert "agents.helper.temprature (line 4)" in err


def test_config_validate_yaml_syntax_and_missing_file_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "config.yaml"
    broken.write_text("agents:\n  helper: {display_name: Helper\n")

    code, _out, err = _validate(broken)
    assert code == 2 and "YAML syntax error" in err and "line " in err

    code, _out, err = _validate(tmp_path / "absent.yaml")
    assert code == 2 and "file not found" in err


def test_config_validate_reads_env_from_the_dotenv_beside_the_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper: {display_name: '${HELPER_NAME}'}\n")
    (tmp_path / ".env").write_text("HELPER_NAME=From Dotenv\n")

    result = subprocess.run(  # its own process, so no variable of this one leaks in
        [sys.executable, "-m", "mindroom", "config", "validate", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert "valid (1 agents" in result.stdout

    (tmp_path / ".env").unlink()
    result = subprocess.run(
        [sys.executable, "-m", "mindroom", "config", "validate", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2
    assert "HELPER_NAME" in result.stderr
