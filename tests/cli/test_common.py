"""Every command finds the config and the data directory as `mindroom run` does, from any folder; when it finds
nothing it says where it looked and which flag to pass."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mindroom.cli import app
from mindroom.cli.common import locate

runner = CliRunner()
_ENV = ("MATRIX_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINDROOM_")
HOOK = """
from mindroom.hooks import hook

@hook("message:received")
async def greet(ctx):
    pass
"""


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder that is not the deployment's, as the current folder, with an empty home."""
    for name in list(os.environ):
        if name.startswith(_ENV):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _deployment(folder: Path) -> Path:
    """A config with an agent, a files-mode knowledge base and a plugin; its `.env` puts the data in `data/`."""
    plugin = folder / "plugins" / "greeter"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "greeter", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(HOOK)
    (folder / "shelf").mkdir()
    config = {
        "models": {"default": {"provider": "offline", "id": "offline"}},
        "agents": {"assistant": {"display_name": "Assistant", "rooms": ["lobby"]}},
        "knowledge_bases": {"shelf": {"path": "shelf", "mode": "files"}},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / ".env").write_text("MINDROOM_STORAGE_PATH=data\n")
    return folder / "config.yaml"


def test_locate_searches_the_current_folder_then_home_and_a_named_config_wins(elsewhere, tmp_path, monkeypatch):
    home_config = tmp_path / "home" / ".mindroom" / "config.yaml"
    (elsewhere / "config.yaml").mkdir()  # a folder of that name is no config
    (elsewhere / "config.yml").write_text("agents: {}\n")  # nor is a file of a near name

    nothing = locate(None, None)
    home_config.parent.mkdir()
    home_config.write_text("agents: {}\n")
    from_home = locate(None, None)
    monkeypatch.setenv("MINDROOM_CONFIG_PATH", "  ")
    blank_variable = locate(None, None)
    deployed = _deployment(tmp_path / "deploy")
    monkeypatch.setenv("MINDROOM_CONFIG_PATH", str(deployed))
    from_variable = locate(None, None)
    given = locate(tmp_path / "deploy" / "config.yaml.bak", None)

    assert not nothing.config_found
    assert nothing.looked_in == (elsewhere / "config.yaml", home_config)
    assert str(elsewhere / "config.yaml") in nothing.config_missing() and str(home_config) in nothing.config_missing()
    assert nothing.environment.storage_root == elsewhere / "mindroom_data"
    assert from_home.config_found and from_home.environment.config_path == home_config
    assert from_home.environment.storage_root == home_config.parent / "mindroom_data"
    assert blank_variable.environment.config_path == home_config
    assert from_variable.environment.config_path == deployed and from_variable.config_from == "MINDROOM_CONFIG_PATH"
    assert from_variable.environment.storage_root == deployed.parent / "data"  # `.env`'s relative path, beside it
    # A config named by --config is not replaced by one the search would find.
    assert not given.config_found and given.looked_in == (tmp_path / "deploy" / "config.yaml.bak",)
    assert "config.yaml.bak: file not found (given by --config)" in given.config_missing()
    assert "--config" in given.config_fix()


def test_locate_storage_path_option_then_variable_then_dotenv_beside_the_config(elsewhere, tmp_path, monkeypatch):
    deployed = _deployment(tmp_path / "deploy")

    from_dotenv = locate(deployed, None)
    monkeypatch.setenv("MINDROOM_STORAGE_PATH", "relative-data")
    from_variable = locate(deployed, None)
    from_option = locate(deployed, tmp_path / "opt")

    assert from_dotenv.environment.storage_root == deployed.parent / "data"
    assert f"MINDROOM_STORAGE_PATH in {deployed.parent / '.env'}" in from_dotenv.data_dir()
    # The process's variable is the command's, relative to its folder, as MindRoom reads it.
    assert from_variable.environment.storage_root == elsewhere / "relative-data"
    assert "(given by MINDROOM_STORAGE_PATH)" in from_variable.data_dir()
    assert from_option.environment.storage_root == tmp_path / "opt"
    assert "(given by --storage-path)" in from_option.data_dir()


NEEDS_CONFIG = [
    ["run"],
    ["doctor", "--no-model-call"],
    ["config", "validate"],
    ["plugins", "list"],
    ["hooks", "list"],
    ["knowledge", "status"],
    ["knowledge", "reindex", "shelf"],
]


@pytest.mark.parametrize("command", NEEDS_CONFIG, ids=" ".join)
def test_command_without_a_config_says_where_it_looked_and_which_flag_to_pass(elsewhere, tmp_path, command):
    result = runner.invoke(app, command)

    assert result.exit_code != 0
    assert str(elsewhere / "config.yaml") in result.output, result.output
    assert str(tmp_path / "home" / ".mindroom" / "config.yaml") in result.output
    assert "--config" in result.output
    assert not (elsewhere / "mindroom_data").exists()  # nothing made in a folder that holds no deployment


@pytest.mark.parametrize(
    "command",
    [["chat", "-m", "hi"], ["state", "migrate", "--to", "postgresql://user@127.0.0.1:1/db"], ["hooks", "list"]],
    ids=" ".join,
)
def test_command_without_a_data_dir_names_the_one_it_looked_in_and_the_flags(elsewhere, command):
    result = runner.invoke(app, command)

    assert result.exit_code == 2
    assert str(elsewhere / "mindroom_data") in result.output, result.output
    assert "--storage-path" in result.output and "--config" in result.output


def _named(how: str, deployed: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Name the deployment's config the way `how` says, and return the flags to add (if any)."""
    if how == "--config":
        return ["--config", str(deployed)]
    if how == "MINDROOM_CONFIG_PATH":
        monkeypatch.setenv(how, str(deployed))
    else:  # ~/.mindroom, as MindRoom searches it: a link to the deployment's folder
        (Path(os.environ["HOME"]) / ".mindroom").symlink_to(deployed.parent)
    return []


FINDS = [
    (["config", "validate"], "config.yaml: valid (1 agents"),
    (["plugins", "list"], "greeter"),
    (["hooks", "list"], "greet"),
    (["knowledge", "status"], "shelf: files mode (no index)"),
    (["doctor", "--no-model-call"], "is writable"),
]


@pytest.mark.parametrize("how", ["--config", "MINDROOM_CONFIG_PATH", "~/.mindroom"])
@pytest.mark.parametrize(("command", "expected"), FINDS, ids=[" ".join(c) for c, _ in FINDS])
def test_command_from_another_folder_finds_the_named_config_and_its_data(
    elsewhere, tmp_path, monkeypatch, how, command, expected
):
    deployed = _deployment(tmp_path / "deploy")
    flags = _named(how, deployed, monkeypatch)

    result = runner.invoke(app, [*command, *flags])

    assert expected in result.output, result.output
    if command[0] == "doctor":
        assert f"config: {deployed} is valid" in result.output
        assert f"data dir: {deployed.parent / 'data'} is writable" in result.output  # `.env` beside the config
    assert not (elsewhere / "mindroom_data").exists() and not (elsewhere / "data").exists()


def test_state_migrate_from_another_folder_looks_in_the_data_dir_the_config_names(elsewhere, tmp_path):
    deployed = _deployment(tmp_path / "deploy")

    result = runner.invoke(app, ["state", "migrate", "--to", "postgresql://user@127.0.0.1:1/db", "-c", str(deployed)])

    assert result.exit_code == 2
    assert f"{deployed.parent / 'data'} (given by MINDROOM_STORAGE_PATH in {deployed.parent / '.env'})" in result.output


def test_chat_from_another_folder_names_the_data_dir_it_found_no_homeserver_in(elsewhere, tmp_path):
    deployed = _deployment(tmp_path / "deploy")

    result = runner.invoke(app, ["chat", "-m", "hi", "--config", str(deployed)])

    assert result.exit_code == 2
    assert result.output.startswith("no homeserver:")
    assert str(deployed.parent / "data") in result.output
    assert "start `mindroom run`" in result.output and "--storage-path" in result.output
