"""`mindroom doctor`: one line per check, pass or the fix, never a secret."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mindroom.cli import app
from mindroom.matrix import BotCredentials, CredentialStore
from mindroom.testing.model_server import HttpError, Text

runner = CliRunner()
SECRET = "shared-secret-do-not-print-4242"
API_KEY = "sk-doctor-test-key-do-not-print-0000"
_ENV = ("MATRIX_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINDROOM_", "DEEPSEEK_")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(_ENV):
            monkeypatch.delenv(name)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write(tmp_path: Path, models: dict, *, plugins: list | None = None) -> Path:
    config = {
        "models": models,
        "agents": {"assistant": {"display_name": "Assistant", "rooms": ["lobby"]}},
        "plugins": plugins or [],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _doctor(config: Path, *args: str):
    return runner.invoke(app, ["doctor", "-c", str(config), "--storage-path", str(config.parent / "data"), *args])


def _lines(output: str) -> dict[str, str]:
    lines = {}
    for line in output.splitlines():
        status, _, rest = line.partition("  ")
        name, _, _ = rest.partition(":")
        lines[name.strip()] = f"{status.strip()} {rest}"
    return lines


def test_doctor_on_the_embedded_default_passes_and_warns_about_the_offline_model(tmp_path):
    config = _write(tmp_path, {"default": {"provider": "offline", "id": "offline"}})

    result = _doctor(config)

    assert result.exit_code == 0, result.output
    lines = _lines(result.output)
    assert lines["config"].startswith("ok")
    assert lines["data dir"].startswith("ok")
    assert lines["homeserver"].startswith("ok") and "embedded" in lines["homeserver"]
    assert lines["account router"].startswith("ok") and "registered on first run" in lines["account router"]
    assert lines["model default"].startswith("warn") and "OPENAI_API_KEY" in lines["model default"]


def test_doctor_names_the_fix_for_each_failure_and_never_prints_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("MATRIX_HOMESERVER", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("MATRIX_REGISTRATION_SHARED_SECRET", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    models = {
        "default": {
            "provider": "openai",
            "id": "gpt-x",
            "extra_kwargs": {"base_url": f"http://127.0.0.1:{_closed_port()}/v1", "max_retries": 0},
        },
        "other": {"provider": "anthropic", "id": "claude"},
    }
    config = _write(tmp_path, models)

    result = _doctor(config)

    assert result.exit_code == 1
    lines = _lines(result.output)
    assert lines["homeserver"].startswith("FAIL") and "fix: check MATRIX_HOMESERVER" in lines["homeserver"]
    assert lines["model default"].startswith("FAIL") and "fix:" in lines["model default"]
    assert SECRET not in result.output and API_KEY not in result.output


def test_doctor_reports_a_missing_key_and_a_broken_plugin(tmp_path):
    plugin = tmp_path / "plugins" / "broken"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "broken", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text("import not_a_module_anywhere\n")
    config = _write(tmp_path, {"default": {"provider": "openai", "id": "gpt-4o-mini"}})

    lines = _lines(_doctor(config).output)

    assert lines["model default"].startswith("FAIL") and "set OPENAI_API_KEY" in lines["model default"]
    # `mindroom run` starts without a plugin that does not load: a warning, as `config validate` gives.
    assert lines["plugin broken"].startswith("warn") and "not_a_module_anywhere" in lines["plugin broken"]
    assert "mindroom run starts without it" in lines["plugin broken"]


BAD_MANIFESTS = {
    "invalid-utf8": b'{"name": "caf\xe9", "hooks_module": "hooks.py"}',
    "deep-nesting": b'{"skills": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
    "nul-in-manifest": b'{"name": "nul-in-manifest", "hooks_module": "hooks\\u0000.py"}',
}


@pytest.mark.parametrize("folder", sorted(BAD_MANIFESTS))
def test_doctor_reports_a_bad_manifest_as_that_plugins_failure(tmp_path, folder):
    bad = tmp_path / "plugins" / folder
    bad.mkdir(parents=True)
    (bad / "mindroom.plugin.json").write_bytes(BAD_MANIFESTS[folder])
    good = tmp_path / "plugins" / "good"
    good.mkdir()
    (good / "mindroom.plugin.json").write_text(json.dumps({"name": "good"}))
    config = _write(tmp_path, {"default": {"provider": "offline", "id": "offline"}})

    result = _doctor(config, "--no-model-call")

    assert result.exit_code == 0, result.output  # run starts without that plugin; doctor says so and passes
    lines = _lines(result.output)
    assert lines[f"plugin {folder}"].startswith("warn") and "fix:" in lines[f"plugin {folder}"]
    assert lines["plugin good"].startswith("ok")


def test_doctor_reports_an_invalid_config_with_its_path(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  Bad Name: {display_name: x}\n")

    result = _doctor(config)

    assert result.exit_code == 1
    assert _lines(result.output)["config"].startswith("FAIL")
    assert str(config) in result.output


def test_doctor_checks_a_model_answers_and_a_stored_session_works(
    tmp_path, monkeypatch, model_server, matrix_homeserver
):
    model_server.set_default(Text("OK"))
    monkeypatch.setenv("MATRIX_HOMESERVER", matrix_homeserver.url)
    monkeypatch.setenv("MATRIX_REGISTRATION_SHARED_SECRET", matrix_homeserver.registration_shared_secret)
    models = {"default": {"provider": "openai", "id": "m", "extra_kwargs": {"base_url": model_server.base_url}}}
    config = _write(tmp_path, models)
    user = matrix_homeserver.register_user(f"doctor_{tmp_path.name[-6:].lower()}", "pw-123456")
    store = CredentialStore(tmp_path / "data")
    store.save("router", BotCredentials(user.user_id, user.device_id, user.access_token, user.password))
    store.save("assistant", BotCredentials(user.user_id, user.device_id, "syt_revoked_token_value", None))

    result = _doctor(config)

    lines = _lines(result.output)
    assert result.exit_code == 0, result.output
    assert lines["homeserver"].startswith("ok") and "reachable" in lines["homeserver"]
    assert lines["account router"].startswith("ok") and "working session" in lines["account router"]
    assert lines["account assistant"].startswith("warn")
    assert lines["model default"].startswith("ok") and "answered" in lines["model default"]
    assert user.access_token not in result.output and matrix_homeserver.registration_shared_secret not in result.output

    skipped = _lines(_doctor(config, "--no-model-call").output)
    assert "not called" in skipped["model default"]


def test_doctor_warns_when_other_users_may_read_the_data_dir(tmp_path):
    config = _write(tmp_path, {"default": {"provider": "offline", "id": "offline"}})
    data = config.parent / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)

    lines = _lines(_doctor(config, "--no-model-call").output)

    assert lines["data dir"].startswith("warn") and f"chmod 700 {data}" in lines["data dir"]


def test_doctor_reports_each_configured_model_ok_key_missing_unreachable_or_unknown(tmp_path, model_server):
    model_server.set_default(Text("OK"))
    model_server.when(lambda request: request.get("model") == "no-such-model", HttpError(404, "model not found"))
    models = {
        "default": {"provider": "anthropic", "id": "claude-x", "host": model_server.url, "api_key": API_KEY},
        "local": {"provider": "ollama", "id": "no-such-model", "host": model_server.url},
        "down": {"provider": "ollama", "id": "llama", "host": f"http://127.0.0.1:{_closed_port()}"},
        "keyless": {"provider": "deepseek", "id": "deepseek-chat"},
    }
    config = _write(tmp_path, models)

    result = _doctor(config)

    lines = _lines(result.output)
    assert result.exit_code == 1
    assert lines["model default"].startswith("ok") and "anthropic:claude-x answered" in lines["model default"]
    assert lines["model local"].startswith("FAIL") and "model unknown" in lines["model local"]
    assert "ollama pull no-such-model" in lines["model local"]
    assert lines["model down"].startswith("FAIL") and "unreachable" in lines["model down"]
    assert lines["model keyless"].startswith("FAIL") and "key missing" in lines["model keyless"]
    assert "set DEEPSEEK_API_KEY" in lines["model keyless"]
    assert API_KEY not in result.output
    assert [r["model"] for r in model_server.requests_to("anthropic")] == ["claude-x"]  # one tiny call each


def test_doctor_lists_the_settings_changed_from_chat_and_warns_of_one_that_no_longer_fits(tmp_path):
    from mindroom.config.overrides import Override
    from mindroom.state.sqlite.overrides import SqliteOverrideStore

    config = _write(tmp_path, {"default": {"provider": "offline", "id": "offline"}})
    (tmp_path / "data" / "state").mkdir(parents=True)
    store = SqliteOverrideStore(tmp_path / "data" / "state" / "overrides.db")
    store.put(Override("config", "defaults.num_history_runs", 3, "@admin:hs", 1.0))
    store.put(Override("config", "agents.assistant.model", "gone", "@admin:hs", 2.0))
    store.put(Override("room", "thread_mode", "room", "@admin:hs", 3.0, room_id="!lobby:hs"))
    store.close()

    result = _doctor(config)

    listed = [line for line in result.output.splitlines() if "chat settings" in line]
    assert len(listed) == 3, result.output
    assert listed[0].startswith("ok") and "defaults.num_history_runs = 3 (config.yaml; set by @admin:hs)" in listed[0]
    assert listed[1].startswith("warn") and "agents.assistant.model = 'gone'" in listed[1]
    assert "no longer fits config.yaml" in listed[1]
    assert listed[2].startswith("ok") and "thread_mode = 'room' (room !lobby:hs" in listed[2]
    assert "!config reset agents.assistant.model" in result.output


def test_doctor_warns_of_a_stored_chat_setting_chat_may_no_longer_make_and_blanks_its_secret(tmp_path):
    from mindroom.config.overrides import Override
    from mindroom.state.sqlite.overrides import SqliteOverrideStore

    config = _write(tmp_path, {"default": {"provider": "offline", "id": "offline"}})
    (tmp_path / "data" / "state").mkdir(parents=True)
    store = SqliteOverrideStore(tmp_path / "data" / "state" / "overrides.db")
    store.put(Override("config", "models.default.host", "http://127.0.0.1:9/v1", "@admin:hs", 1.0))
    store.put(Override("config", "models.default.api_key", "operator-key-0123456789", "@admin:hs", 2.0))
    store.close()

    result = _doctor(config)

    listed = [line for line in result.output.splitlines() if "chat settings" in line]
    assert len(listed) == 2, result.output
    assert listed[0].startswith("warn") and "models.default.host = 'http://127.0.0.1:9/v1'" in listed[0]
    assert all("chat may not change this key; edit config.yaml; passed over" in line for line in listed)
    assert "!config reset models.default.host" in result.output
    assert "operator-key" not in result.output
