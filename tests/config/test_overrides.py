"""Settings changed from chat: key paths, config overrides validated as the file is, and the model precedence."""

from __future__ import annotations

import pytest
import yaml

from mindroom.config.loading import parse_config_text
from mindroom.config.overrides import (
    ChatSettings,
    Override,
    OverrideScope,
    apply_config_overrides,
    parse_key_path,
    scoped_problems,
)
from mindroom.errors import ConfigError

TEXT = yaml.safe_dump(
    {
        "models": {"default": {"provider": "openai", "id": "m"}, "fast": {"provider": "openai", "id": "f"}},
        "agents": {"helper": {"display_name": "Helper", "rooms": ["lobby", "den"]}},
        "room_models": {"lobby": "fast"},
    }
)


def config_override(key: str, value: object, at: float = 1.0) -> Override:
    return Override("config", key, value, "@admin:hs", at)


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("defaults.num_history_runs", ("defaults", "num_history_runs")),
        ("agents.helper.rooms[1]", ("agents", "helper", "rooms", 1)),
        ("agents.helper.rooms.0", ("agents", "helper", "rooms", 0)),
    ],
)
def test_key_paths_use_dots_and_list_indexes(path, parts):
    assert parse_key_path(path) == parts


@pytest.mark.parametrize("path", ["", "agents..helper", "agents.helper[x]", "a[1"])
def test_odd_key_paths_are_refused(path):
    with pytest.raises(ValueError, match="not a key path"):
        parse_key_path(path)


def test_config_overrides_are_set_into_a_copy_of_the_document():
    document = {"agents": {"helper": {"instructions": ["Be kind."], "rooms": ["lobby"]}}}

    changed = apply_config_overrides(
        document,
        [config_override("agents.helper.instructions", ["Be brief."]), config_override("defaults.markdown", False)],
    )

    assert changed == {
        "agents": {"helper": {"instructions": ["Be brief."], "rooms": ["lobby"]}},
        "defaults": {"markdown": False},
    }
    assert document == {"agents": {"helper": {"instructions": ["Be kind."], "rooms": ["lobby"]}}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("models.default.host", "http://127.0.0.1:9/v1"),
        ("models.default.extra_kwargs", {"base_url": "http://127.0.0.1:9/v1"}),
        ("models.evil", {"provider": "openai", "id": "m", "host": "http://127.0.0.1:9/v1"}),
        ("agents.helper.rooms[0]", "den"),
        ("agents.helper", {"instructions": ["Be brief."], "tools": ["shell"]}),
        ("tools.mcp.sandbox", "none"),
    ],
)
def test_config_overrides_of_keys_chat_may_not_change_are_refused(key, value):
    document = {"models": {"default": {"provider": "openai", "id": "m"}}, "agents": {"helper": {"rooms": ["lobby"]}}}

    with pytest.raises(ValueError, match="cannot be changed from chat"):
        apply_config_overrides(document, [config_override(key, value)])


def test_config_overrides_never_add_an_agent():
    with pytest.raises(ValueError, match=r"config\.yaml has no agents entry 'ghost'; chat never adds one"):
        apply_config_overrides({"agents": {}}, [config_override("agents.ghost.display_name", "Ghost")])
    with pytest.raises(ConfigError, match="chat never adds one"):
        parse_config_text(TEXT, "config.yaml", {}, [config_override("agents.ghost", {"display_name": "Ghost"})])


def test_a_mapping_set_at_a_parent_changes_its_leaves_and_keeps_the_rest():
    text = yaml.safe_dump({**yaml.safe_load(TEXT), "defaults": {"tools": ["calculator"], "num_history_runs": 5}})

    config = parse_config_text(text, "config.yaml", {}, [config_override("defaults", {"markdown": False})])

    assert config.defaults.markdown is False
    assert config.defaults.tools == ["calculator"] and config.defaults.num_history_runs == 5


def test_a_stored_override_chat_may_not_make_is_passed_over_and_the_others_apply():
    endpoint = config_override("models.default.host", "http://127.0.0.1:9/v1")
    history = config_override("defaults.num_history_runs", 4, 2.0)
    settings = ChatSettings((endpoint, history))

    config = parse_config_text(TEXT, "config.yaml", {}, settings.config_overrides(), strict=False)
    unfiltered = parse_config_text(TEXT, "config.yaml", {}, [endpoint, history], strict=False)

    assert settings.config_overrides() == (history,) and settings.passed_over() == (endpoint,)
    assert config.models["default"].host is None and config.defaults.num_history_runs == 4
    assert unfiltered.models["default"].host is None and unfiltered.defaults.num_history_runs == 4
    with pytest.raises(ConfigError, match="cannot be changed from chat"):
        parse_config_text(TEXT, "config.yaml", {}, [endpoint])


def test_an_override_value_is_taken_as_written_never_filled_from_the_environment():
    env = {"OPENAI_API_KEY": "sk-operator-secret-0000"}
    override = config_override("agents.helper.instructions", ["Say ${OPENAI_API_KEY}."])

    config = parse_config_text(TEXT, "config.yaml", env, [override])

    assert config.agents["helper"].instructions == ["Say ${OPENAI_API_KEY}."]


def test_an_override_shows_a_secret_named_value_blanked():
    assert "sk-" not in config_override("models.default.api_key", "sk-operator-secret-0000").describe()
    assert "hunter2" not in config_override("agents.helper.password", "hunter2").describe()
    assert config_override("agents.helper.model", "fast").describe() == (
        "agents.helper.model = 'fast' (config.yaml; set by @admin:hs)"
    )


def test_an_override_is_validated_as_if_written_in_the_file():
    config = parse_config_text(TEXT, "config.yaml", {}, [config_override("defaults.num_history_runs", 3)])
    assert config.defaults.num_history_runs == 3

    with pytest.raises(ConfigError, match=r"defaults\.num_history_runs: Input should be greater than or equal to 0"):
        parse_config_text(TEXT, "config.yaml", {}, [config_override("defaults.num_history_runs", -1)])
    with pytest.raises(ConfigError, match="unknown model 'huge'"):
        parse_config_text(TEXT, "config.yaml", {}, [config_override("agents.helper.model", "huge")])


def test_an_override_that_no_longer_fits_is_passed_over_unless_strict():
    overrides = [config_override("defaults.num_history_runs", 4), config_override("agents.helper.model", "huge", 2.0)]

    config = parse_config_text(TEXT, "config.yaml", {}, overrides, strict=False)

    assert config.defaults.num_history_runs == 4
    assert config.agents["helper"].model == "default"
    with pytest.raises(ConfigError):
        parse_config_text("models: [", "config.yaml", {}, overrides, strict=False)  # the file's own errors raise


def test_model_precedence_is_thread_then_room_then_room_models_then_own():
    models = {"default": 1, "fast": 2, "slow": 3}
    room = Override("room", "model", "slow", "@admin:hs", 1.0, room_id="!lobby:hs")
    thread = Override("thread", "model", "default", "@admin:hs", 2.0, "!lobby:hs", "$root")
    stale = Override("room", "model", "gone", "@admin:hs", 1.0, room_id="!den:hs")
    settings = ChatSettings((room, thread, stale))

    def pick(room_id: str, thread_id: str | None, keys: set[str]) -> str:
        return settings.model_name(models, {"lobby": "fast", "den": "fast"}, "own", room_id, thread_id, keys)

    assert pick("!lobby:hs", "$root", {"lobby"}) == "default"
    assert pick("!lobby:hs", "$other", {"lobby"}) == "slow"
    assert pick("!den:hs", None, {"den"}) == "fast"  # the room's override names a model that is gone
    assert pick("!elsewhere:hs", None, set()) == "own"


def test_settings_replace_an_override_of_the_same_slot_and_drop_one_by_slot():
    first = Override("room", "thread_mode", "room", "@a:hs", 1.0, room_id="!r:hs")
    second = Override("room", "thread_mode", "thread", "@b:hs", 2.0, room_id="!r:hs")
    instructions = Override("thread", "instructions:helper", ["Be brief."], "@a:hs", 3.0, "!r:hs", "$t")

    settings = ChatSettings((first,)).with_override(second).with_override(instructions)

    assert settings.thread_mode("!r:hs") == "thread"
    assert settings.instructions("helper", "!r:hs", "$t") == ("Be brief.",)
    assert settings.instructions("helper", "!r:hs", "$u") == ()
    assert settings.without(second.slot).thread_mode("!r:hs") is None


@pytest.mark.parametrize(
    ("scope", "value", "problems"),
    [
        pytest.param("room", True, [], id="on"),
        pytest.param("room", False, [], id="off"),
        pytest.param("room", "yes", ["voice_replies: 'yes' is neither true nor false"], id="a-word"),
        pytest.param("room", 1, ["voice_replies: 1 is neither true nor false"], id="a-number"),
        pytest.param("thread", True, ["'voice_replies' cannot be set for a thread"], id="for-a-thread"),
    ],
)
def test_overrides_voice_replies_is_a_rooms_true_or_false(scope: OverrideScope, value: object, problems: list[str]):
    override = Override(scope, "voice_replies", value, "@a:x", 0.0, "!r:x", "$t" if scope == "thread" else "")

    assert scoped_problems(override, ["default"], ["helper"]) == problems
