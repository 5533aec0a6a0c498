"""Loading `config.yaml`: the MindRoom example, `${ENV}` substitution, and errors naming key paths and lines."""

from pathlib import Path

import pytest

from mindroom.config import Config, HookOverrideConfig, PluginEntryConfig, load_config, parse_config_text
from mindroom.errors import ConfigError

EXAMPLE = """\
models:
  default: {provider: openai, id: scripted, extra_kwargs: {base_url: "http://127.0.0.1:18190/v1"}}
agents:
  assistant: {display_name: Assistant, role: A helpful assistant., model: default, tools: [], rooms: [bench]}
  analyst: {display_name: Analyst, role: Analyse data., instructions: ["Be precise."], model: default, rooms: [bench, lab]}
router: {model: default}
rooms: {bench: {description: Benchmark room}}
authorization: {global_users: ["@alice:localhost"], room_permissions: {}, default_room_access: false}
room_defaults: {invite_users: ["@alice:localhost"]}
defaults: {enable_streaming: false}
plugins: []
"""  # noqa: E501 - the example config exactly as MindRoom users write it


def write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_text(exc_info):
    return str(exc_info.value)


def test_loading_mindroom_example_config(tmp_path):
    config = load_config(write(tmp_path, EXAMPLE), env={})

    assert isinstance(config, Config)
    assert config.models["default"].provider == "openai"
    assert config.models["default"].id == "scripted"
    assert config.models["default"].extra_kwargs == {"base_url": "http://127.0.0.1:18190/v1"}
    assert set(config.agents) == {"assistant", "analyst"}
    assert config.agents["assistant"].role == "A helpful assistant."
    assert config.agents["assistant"].tools == []
    assert config.agents["analyst"].instructions == ["Be precise."]
    assert config.agents["analyst"].rooms == ["bench", "lab"]
    assert config.router.model == "default"
    assert config.rooms["bench"].description == "Benchmark room"
    assert config.authorization.global_users == ["@alice:localhost"]
    assert config.authorization.default_room_access is False
    assert config.room_defaults.invite_users == ["@alice:localhost"]
    assert config.defaults.enable_streaming is False
    assert config.plugins == []
    assert config.all_room_keys() == ["bench", "lab"]


def test_loading_empty_file_gives_defaults(tmp_path):
    config = load_config(write(tmp_path, ""), env={})

    assert config.agents == {}
    assert config.plugins == []


def test_loading_missing_file_names_it(tmp_path):
    with pytest.raises(ConfigError, match="file not found") as exc_info:
        load_config(tmp_path / "nope.yaml")

    assert "nope.yaml" in error_text(exc_info)


def test_loading_env_substitution(tmp_path):
    text = EXAMPLE.replace("id: scripted", 'id: "${MODEL_ID}"').replace(
        "Benchmark room", '"${ROOM_DESC:-Fallback room}"'
    )

    config = load_config(write(tmp_path, text), env={"MODEL_ID": "gpt-x"})

    assert config.models["default"].id == "gpt-x"
    assert config.rooms["bench"].description == "Fallback room"


def test_loading_env_value_beats_default(tmp_path):
    text = EXAMPLE.replace("Benchmark room", '"${ROOM_DESC:-Fallback room}"')

    config = load_config(write(tmp_path, text), env={"ROOM_DESC": "From env"})

    assert config.rooms["bench"].description == "From env"


def test_loading_empty_default_is_allowed(tmp_path):
    text = EXAMPLE.replace("Benchmark room", '"x${EMPTY:-}y"')

    assert load_config(write(tmp_path, text), env={}).rooms["bench"].description == "xy"


def test_loading_env_substitution_inside_longer_strings_and_lists(tmp_path):
    text = EXAMPLE.replace('global_users: ["@alice:localhost"]', 'global_users: ["@${USER_NAME}:${SERVER:-localhost}"]')

    config = load_config(write(tmp_path, text), env={"USER_NAME": "bob"})

    assert config.authorization.global_users == ["@bob:localhost"]


def test_loading_env_defaults_to_process_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDROOM_TEST_MODEL", "from-process")
    text = EXAMPLE.replace("id: scripted", 'id: "${MINDROOM_TEST_MODEL}"')

    assert load_config(write(tmp_path, text)).models["default"].id == "from-process"


def test_loading_missing_env_var_names_the_key(tmp_path):
    text = EXAMPLE.replace("id: scripted", 'id: "${MISSING_MODEL_ID}"')

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    message = error_text(exc_info)
    assert "MISSING_MODEL_ID" in message
    assert "models.default.id" in message
    assert "config.yaml" in message


def test_loading_missing_env_var_in_plugin_settings_names_the_key(tmp_path):
    text = EXAMPLE.replace(
        "plugins: []",
        "plugins:\n  - path: ./plugins/weather\n    settings:\n      weather_api_key: ${OPENWEATHER_API_KEY}\n",
    )

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    message = error_text(exc_info)
    assert "plugins[0].settings.weather_api_key" in message
    assert "OPENWEATHER_API_KEY" in message


def test_loading_missing_env_var_in_list_names_the_index(tmp_path):
    text = EXAMPLE.replace('instructions: ["Be precise."]', 'instructions: ["ok", "${NOPE}"]')

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    assert "agents.analyst.instructions[1]" in error_text(exc_info)


def test_loading_yaml_syntax_error_names_the_line(tmp_path):
    text = "models:\n  default: {provider: openai, id: x}\nagents:\n  a: [unclosed\nrouter: {}\n"

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    message = error_text(exc_info)
    assert "YAML syntax error" in message
    assert "line " in message
    line = int(message.split("line ")[1].split(",")[0])
    assert 4 <= line <= 5


def test_loading_yaml_bad_indentation_names_the_line(tmp_path):
    text = "models:\n  default:\n    id: x\n   provider: openai\n"

    with pytest.raises(ConfigError, match=r"line 4"):
        load_config(write(tmp_path, text), env={})


def test_loading_non_mapping_root_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path, "- a\n- b\n"), env={})


def test_loading_unknown_key_names_path_and_line(tmp_path):
    text = EXAMPLE.replace(
        "  analyst: {display_name: Analyst,", "  analyst: {display_nmae: Oops, display_name: Analyst,"
    )

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    message = error_text(exc_info)
    assert "agents.analyst.display_nmae" in message
    assert "(line 5)" in message


def test_loading_unknown_top_level_key_names_line(tmp_path):
    text = EXAMPLE + "extra_section:\n  a: 1\n"

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    assert "extra_section (line 12)" in error_text(exc_info)


def test_loading_unknown_key_in_plugin_hook_override(tmp_path):
    text = EXAMPLE.replace(
        "plugins: []",
        "plugins:\n  - path: ./plugins/x\n    hooks:\n      h:\n        priorty: 3\n",
    )

    with pytest.raises(ConfigError) as exc_info:
        load_config(write(tmp_path, text), env={})

    message = error_text(exc_info)
    assert "plugins[0].hooks.h.priorty" in message
    assert "(line 15)" in message
    assert "PluginEntryConfig" not in message


def test_loading_wrong_type_names_key(tmp_path):
    text = EXAMPLE.replace("defaults: {enable_streaming: false}", "defaults: {enable_streaming: maybe}")

    with pytest.raises(ConfigError, match=r"defaults\.enable_streaming \(line 10\)"):
        load_config(write(tmp_path, text), env={})


def test_loading_unknown_model_reference_is_an_error(tmp_path):
    text = EXAMPLE.replace(
        'analyst: {display_name: Analyst, role: Analyse data., instructions: ["Be precise."], model: default',
        'analyst: {display_name: Analyst, role: Analyse data., instructions: ["Be precise."], model: missing',
    )

    with pytest.raises(ConfigError, match="missing"):
        load_config(write(tmp_path, text), env={})


def test_loading_router_is_a_reserved_agent_name(tmp_path):
    text = EXAMPLE.replace("  assistant:", "  router:")

    with pytest.raises(ConfigError, match="reserved"):
        load_config(write(tmp_path, text), env={})


def test_loading_string_and_object_plugin_entries_mixed(tmp_path):
    text = EXAMPLE.replace(
        "plugins: []",
        """plugins:
  - ./plugins/simple
  - path: ./plugins/personal-context
    settings:
      dawarich_url: http://dawarich.local
      weather_api_key: ${OPENWEATHER_API_KEY}
    hooks:
      enrich_with_weather:
        enabled: false
      enrich_with_location:
        priority: 10
        timeout_ms: 500
  - path: ./plugins/guard
    hooks:
      guard: {fail_closed: true, mode: monitor}
""",
    )

    config = load_config(write(tmp_path, text), env={"OPENWEATHER_API_KEY": "k-123"})

    assert config.plugins[0] == "./plugins/simple"
    entries = config.plugin_entries
    assert [entry.path for entry in entries] == ["./plugins/simple", "./plugins/personal-context", "./plugins/guard"]
    assert entries[0] == PluginEntryConfig(path="./plugins/simple")
    assert entries[0].settings == {}
    assert entries[0].hooks == {}
    personal = entries[1]
    assert personal.settings == {"dawarich_url": "http://dawarich.local", "weather_api_key": "k-123"}
    assert personal.hooks["enrich_with_weather"] == HookOverrideConfig(enabled=False)
    location = personal.hooks["enrich_with_location"]
    assert (location.enabled, location.priority, location.timeout_ms) == (True, 10, 500)
    guard = entries[2].hooks["guard"]
    assert (guard.fail_closed, guard.mode) == (True, "monitor")


def test_loading_hook_override_defaults_match_spec():
    override = HookOverrideConfig()

    assert (override.enabled, override.priority, override.timeout_ms) == (True, None, None)
    assert override.mode == "enforce"
    assert override.fail_closed is None


@pytest.mark.parametrize(("field", "value"), [("timeout_ms", 0), ("timeout_ms", -1), ("mode", "loud")])
def test_loading_invalid_hook_override_values_name_the_key(tmp_path, field, value):
    text = EXAMPLE.replace("plugins: []", f"plugins:\n  - path: ./p\n    hooks:\n      h: {{{field}: {value}}}\n")

    with pytest.raises(ConfigError, match=rf"plugins\[0\]\.hooks\.h\.{field}"):
        load_config(write(tmp_path, text), env={})


def test_loading_plugin_entry_enabled_flag(tmp_path):
    text = EXAMPLE.replace("plugins: []", "plugins:\n  - path: ./plugins/off\n    enabled: false\n")

    (entry,) = load_config(write(tmp_path, text), env={}).plugin_entries

    assert entry.enabled is False


def test_loading_parse_config_text_names_source(tmp_path):
    with pytest.raises(ConfigError) as exc_info:
        parse_config_text("agents: 3\n", Path("/etc/mindroom/config.yaml"), env={})

    assert exc_info.value.path == Path("/etc/mindroom/config.yaml")
    assert "/etc/mindroom/config.yaml" in error_text(exc_info)
    assert exc_info.value.problems


def test_loading_config_is_frozen(tmp_path):
    config = load_config(write(tmp_path, EXAMPLE), env={})

    with pytest.raises(Exception, match="frozen"):
        config.timezone = "Europe/Berlin"


def test_loading_single_instruction_string_becomes_list(tmp_path):
    text = EXAMPLE.replace('instructions: ["Be precise."]', 'instructions: "Be precise."')

    assert load_config(write(tmp_path, text), env={}).agents["analyst"].instructions == ["Be precise."]
