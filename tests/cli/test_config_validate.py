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
    (tmp_path / "plugins" / "x").mkdir(parents=True)
    (tmp_path / "plugins" / "x" / "mindroom.plugin.json").write_text('{"name": "x"}')

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


def _mindroom(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # its own process: what an operator runs, with nothing of this one's environment
        [sys.executable, "-m", "mindroom", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(cwd), **extra},
    )


def test_config_validate_refuses_what_run_refuses_in_the_same_words(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "agents:\n  helper:\n    display_name: Helper\n    tools:\n      - calculatorr\n"
        "      - duckduckgo:\n          fixed_max_resultz: 3\n"
    )

    validate = _mindroom(["config", "validate", "-c", str(config)], tmp_path)
    # A homeserver that is never reached: the start stops at the config, before any account signs in.
    run = _mindroom(
        ["run", "-c", str(config), "--no-api", "--storage-path", str(tmp_path / "data")],
        tmp_path,
        MATRIX_HOMESERVER="http://127.0.0.1:9",
    )

    assert (validate.returncode, run.returncode) == (2, 2), run.stderr
    assert validate.stderr.startswith(f"invalid config {config}:\n")
    assert "  agents.helper.tools[0] (line 5): unknown tool 'calculatorr' — fix: " in validate.stderr
    assert "  agents.helper.tools[1] (line 6): 'duckduckgo': setting 'fixed_max_resultz'" in validate.stderr
    assert validate.stderr in run.stderr


def test_config_validate_refuses_a_state_run_cannot_use_in_runs_words(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper:\n    display_name: Helper\n")
    database = {"MINDROOM_DATABASE_URL": "mysql://mindroom:s3cret-pw@10.0.0.7/mindroom"}

    validate = _mindroom(["config", "validate", "-c", str(config)], tmp_path, **database)
    run = _mindroom(
        ["run", "-c", str(config), "--no-api", "--storage-path", str(tmp_path / "data")],
        tmp_path,
        MATRIX_HOMESERVER="http://127.0.0.1:9",
        **database,
    )

    assert (validate.returncode, run.returncode) == (2, 2), run.stderr
    assert "  MINDROOM_DATABASE_URL: the database URL's scheme 'mysql' is not supported" in validate.stderr
    assert validate.stderr in run.stderr
    assert "s3cret-pw" not in validate.stderr + run.stderr


def test_config_validate_warns_of_what_run_starts_without_and_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper:\n    display_name: Helper\n    tools: [tavily]\n    cheap_model: default\n")

    code, out, err = _validate(config)

    assert code == 0, err
    assert out.strip() == f"{config}: valid (1 agents, 0 plugin entries)"
    warnings = err.splitlines()
    assert any(
        line.startswith("warning: agents.helper.tools: 'tavily' cannot run here (missing package")
        and "fix: mindroom tools install tavily" in line
        for line in warnings
    ), err
    assert any(line.startswith("warning: agents.helper.cheap_model (line 5): ") for line in warnings), err


def test_config_validate_warns_of_a_plugin_folder_run_would_start_without(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper: {display_name: Helper}\nplugins:\n  - ./plugins/gone\n")

    code, out, err = _validate(config)

    assert code == 0 and "valid (1 agents, 1 plugin entries)" in out
    assert err.startswith("warning: plugin 'gone' (") and "the daemon runs without it — fix: " in err


def test_config_validate_takes_the_file_with_path_as_mindroom_does(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.yaml"
    config.write_text("agents:\n  helper:\n    display_name: Helper\n    tools: [calculatorr]\n")

    result = runner.invoke(app, ["config", "validate", "--path", str(config)])

    assert result.exit_code == 2
    assert f"invalid config {config}:" in result.stderr
    assert "agents.helper.tools[0] (line 4): unknown tool 'calculatorr'" in result.stderr
