"""The one reader of the environment: `.env`, `*_FILE` secrets, provider defaults, storage root, homeserver."""

from __future__ import annotations

import pytest

from mindroom.config.environment import (
    DEFAULT_SHUTDOWN_GRACE_S,
    HomeserverSettings,
    daemon_environment,
    embedded_appservice,
    homeserver_settings,
    resolve_storage_root,
)
from mindroom.constants import DEFAULT_ACCOUNT_PREFIX
from mindroom.errors import ConfigError


def test_daemon_environment_reads_dotenv_and_picks_the_provider(tmp_path, monkeypatch):
    monkeypatch.delenv("MINDROOM_MODEL_PROVIDER", raising=False)
    monkeypatch.delenv("MINDROOM_MODEL_ID", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MINDROOM_STORAGE_PATH", raising=False)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\nMINDROOM_STORAGE_PATH=./state-here\n")
    config = tmp_path / "config.yaml"

    environment = daemon_environment(config)

    env = environment.values
    assert env["MINDROOM_MODEL_PROVIDER"] == "openai" and env["MINDROOM_MODEL_ID"] == "gpt-4o-mini"
    assert environment.storage_root == (tmp_path / "state-here").resolve()  # the config's folder, not the cwd
    assert environment.runtime_paths.storage_root == environment.storage_root
    assert environment.runtime_paths.env_values["OPENAI_API_KEY"] == "sk-from-dotenv"
    assert resolve_storage_root(config, tmp_path / "x", env) == tmp_path / "x"
    assert resolve_storage_root(config, None, {}) == tmp_path.resolve() / "mindroom_data"
    assert daemon_environment(config, tmp_path / "opt").storage_root == tmp_path / "opt"


def test_daemon_environment_process_environment_wins_over_dotenv(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("MINDROOM_ACCOUNT_PREFIX=from_dotenv_\n")
    monkeypatch.setenv("MINDROOM_ACCOUNT_PREFIX", "from_process_")

    assert daemon_environment(tmp_path / "config.yaml").account_prefix == "from_process_"


def test_daemon_environment_reads_secrets_from_files(tmp_path, monkeypatch):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    monkeypatch.delenv("MATRIX_REGISTRATION_SHARED_SECRET", raising=False)
    monkeypatch.setenv("MATRIX_REGISTRATION_SHARED_SECRET_FILE", str(secret))

    env = daemon_environment(tmp_path / "config.yaml").values

    assert env["MATRIX_REGISTRATION_SHARED_SECRET"] == "from-a-file"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        (
            {"MATRIX_HOMESERVER": "http://127.0.0.1:8008"},
            HomeserverSettings("http://127.0.0.1:8008", "localhost", None, DEFAULT_ACCOUNT_PREFIX),
        ),
        (
            {"MATRIX_HOMESERVER": "https://matrix.example.org", "MATRIX_REGISTRATION_SHARED_SECRET": "s"},
            HomeserverSettings("https://matrix.example.org", "matrix.example.org", "s", DEFAULT_ACCOUNT_PREFIX),
        ),
        (
            {
                "MATRIX_HOMESERVER": "https://hs.example.org",
                "MATRIX_SERVER_NAME": "example.org",
                "MINDROOM_ACCOUNT_PREFIX": "team_",
            },
            HomeserverSettings("https://hs.example.org", "example.org", None, "team_"),
        ),
    ],
)
def test_homeserver_settings_from_the_environment(env, expected):
    assert homeserver_settings(env) == expected


def test_daemon_environment_on_the_embedded_homeserver_keeps_everything_else(tmp_path, monkeypatch):
    monkeypatch.delenv("MATRIX_HOMESERVER", raising=False)
    environment = daemon_environment(tmp_path / "config.yaml")
    assert environment.homeserver is None

    settings = HomeserverSettings("http://127.0.0.1:9", "localhost", "secret")
    embedded = environment.with_homeserver(settings, {"MINDROOM_USER": "@me:localhost"})

    assert embedded.homeserver == settings
    assert embedded.values["MINDROOM_USER"] == "@me:localhost"
    assert embedded.storage_root == environment.storage_root
    assert "MINDROOM_USER" not in environment.values or environment.values["MINDROOM_USER"] != "@me:localhost"


@pytest.mark.parametrize(("raw", "grace"), [(None, DEFAULT_SHUTDOWN_GRACE_S), ("3.5", 3.5), ("-1", 0.0), ("x", 10.0)])
def test_daemon_environment_shutdown_grace(tmp_path, monkeypatch, raw, grace):
    if raw is None:
        monkeypatch.delenv("MINDROOM_SHUTDOWN_GRACE_S", raising=False)
    else:
        monkeypatch.setenv("MINDROOM_SHUTDOWN_GRACE_S", raw)

    assert daemon_environment(tmp_path / "config.yaml").shutdown_grace_s == grace


def test_embedded_appservice_unless_sync_is_asked_for():
    assert embedded_appservice({}) is True
    assert embedded_appservice({"MINDROOM_MATRIX_DELIVERY": "sync"}) is False
    assert embedded_appservice({"MINDROOM_MATRIX_DELIVERY": " AppService "}) is True
    with pytest.raises(ConfigError, match="MINDROOM_MATRIX_DELIVERY must be 'appservice' or 'sync', not 'push'"):
        embedded_appservice({"MINDROOM_MATRIX_DELIVERY": "push"})
