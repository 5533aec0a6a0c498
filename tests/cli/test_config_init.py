"""`mindroom config init`: starter files, provider choice from the environment, no overwriting."""

from __future__ import annotations

import ast
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mindroom
from mindroom.cli import app
from mindroom.cli.config_init import env_template
from mindroom.config.loading import load_config
from mindroom.config.providers import PROVIDER_ENV_VARS, detect_provider

runner = CliRunner()
PROVIDER_VARS = (*PROVIDER_ENV_VARS, "MINDROOM_MODEL_PROVIDER", "MINDROOM_MODEL_ID")


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch):
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)


def test_config_init_without_keys_writes_an_offline_starter_that_validates(tmp_path):
    result = runner.invoke(app, ["config", "init", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert "offline model" in result.output
    config = load_config(tmp_path / "config.yaml", {})
    assert config.models["default"].provider == "offline"
    assert config.authorization.global_users == ["@user:localhost"]
    assert (tmp_path / "plugins").is_dir()
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600


def test_config_init_uses_openai_when_its_key_is_set_and_never_copies_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-123456")

    result = runner.invoke(app, ["config", "init", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert "openai" in result.output and "OPENAI_API_KEY" in result.output
    model = load_config(tmp_path / "config.yaml", {}).models["default"]
    assert (model.provider, model.id) == ("openai", "gpt-4o-mini")
    for written in (tmp_path / "config.yaml", tmp_path / ".env"):
        assert "sk-test-not-a-real-key" not in written.read_text()


def test_config_init_refuses_to_overwrite_without_force(tmp_path):
    (tmp_path / "config.yaml").write_text("agents: {}\n")

    refused = runner.invoke(app, ["config", "init", str(tmp_path)])
    forced = runner.invoke(app, ["config", "init", str(tmp_path), "--force"])

    assert refused.exit_code == 2 and "--force" in refused.output
    assert forced.exit_code == 0
    assert "assistant" in (tmp_path / "config.yaml").read_text()


def test_env_template_lists_every_variable_commented_out():
    text = env_template(detect_provider({}))
    assignments = [line for line in text.splitlines() if "=" in line and not line.startswith("#")]
    assert assignments == []
    for name in ("OPENAI_API_KEY", "MATRIX_HOMESERVER", "MINDROOM_USER", "MINDROOM_STORAGE_PATH"):
        assert f"# {name}=" in text


def test_repo_config_validates_with_the_starter_environment():
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[2] / "config.yaml", {})
    assert config.models["default"].provider == "offline"
    assert config.authorization.global_users == ["@user:localhost"]


@pytest.mark.parametrize(
    ("variable", "provider"),
    [("ANTHROPIC_API_KEY", "anthropic"), ("OLLAMA_HOST", "ollama"), ("DEEPSEEK_API_KEY", "deepseek")],
)
def test_config_init_picks_the_provider_whose_key_is_set(tmp_path, monkeypatch, variable, provider):
    monkeypatch.setenv(variable, "http://127.0.0.1:11434" if variable == "OLLAMA_HOST" else "k" * 24)

    result = runner.invoke(app, ["config", "init", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert load_config(tmp_path / "config.yaml", {}).models["default"].provider == provider
    assert variable in result.output


def test_config_init_prefers_a_hosted_key_over_a_local_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:11434")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k" * 24)

    runner.invoke(app, ["config", "init", str(tmp_path)])

    assert load_config(tmp_path / "config.yaml", {}).models["default"].provider == "anthropic"


_VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")


def _variables_read_from_the_environment() -> set[str]:
    """The variable names the package reads from its environment (`.env` included): every such name written in
    its source, less those given only as a command-line option's `envvar=` (read from the process alone)."""
    named: set[str] = set()
    for path in Path(mindroom.__file__).resolve().parent.rglob("*.py"):
        if path.name == "config_init.py":
            continue  # the file under test names what it writes
        tree = ast.parse(path.read_text(encoding="utf-8"))
        options = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "envvar"}
        for node in ast.walk(tree):
            is_name = isinstance(node, ast.Constant) and isinstance(node.value, str) and _VARIABLE.fullmatch(node.value)
            if is_name and id(node) not in options:
                named.add(node.value)
    return named


def test_config_init_writes_only_variables_the_daemon_reads_from_its_environment(tmp_path):
    result = runner.invoke(app, ["config", "init", str(tmp_path)])
    assert result.exit_code == 0, result.output

    written = re.findall(r"^# ?([A-Z][A-Z0-9_]*)=", (tmp_path / ".env").read_text(), flags=re.MULTILINE)

    assert written and "MINDROOM_STORAGE_PATH" in written
    assert sorted(set(written) - _variables_read_from_the_environment()) == []
    assert "mindroom[" not in (tmp_path / ".env").read_text()
