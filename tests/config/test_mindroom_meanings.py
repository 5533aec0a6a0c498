"""MindRoom's keys with a meaning here, as config reads them: each key's effect on what the daemon resolves."""

from __future__ import annotations

import pytest

from mindroom.config.loading import parse_config_text
from mindroom.config.main import Config
from mindroom.config.models import ModelConfig
from mindroom.errors import ConfigError


def _config(text: str) -> Config:
    return parse_config_text(text, "config.yaml", {})


_MODELS = (
    "models:\n  default: {provider: openai, id: big, context_window: 100000}\n  small: {provider: openai, id: s}\n"
)


def test_meanings_history_limits_come_from_the_agent_then_the_defaults():
    config = _config(
        _MODELS + "defaults: {num_history_messages: 30, max_tool_calls_per_turn: 7, max_tool_calls_from_history: 2}\n"
        "agents:\n  a: {display_name: A}\n  b: {display_name: B, num_history_runs: 4, max_tool_calls_per_turn: 1}\n"
    )

    a, b = config.settings_for("a"), config.settings_for("b")

    assert (a.num_history_messages, a.max_tool_calls_per_turn, a.max_tool_calls_from_history) == (30, 7, 2)
    assert (b.num_history_runs, b.num_history_messages, b.max_tool_calls_per_turn) == (4, None, 1)


def test_meanings_history_limits_exclude_each_other():
    with pytest.raises(ConfigError, match="exclude each other"):
        _config("agents:\n  a: {display_name: A, num_history_runs: 3, num_history_messages: 9}\n")


def test_meanings_compaction_thresholds_and_model():
    config = _config(
        _MODELS + "defaults: {compaction: {threshold_percent: 0.5}}\n"
        "agents:\n  a: {display_name: A}\n  b: {display_name: B, compaction: {threshold_tokens: 900, model: small}}\n"
        "  c: {display_name: C, compaction: {enabled: false}}\n"
    )
    model = config.models["default"]

    assert config.settings_for("a").compaction.budget(model) == 50000
    assert config.settings_for("b").compaction.budget(model) == 900
    assert config.settings_for("b").compaction.model == "small"
    assert config.settings_for("c").compaction.budget(model) is None


def test_meanings_compaction_null_is_off_and_unset_keeps_the_history_budget():
    off = _config("defaults: {compaction: null}\nagents:\n  a: {display_name: A}\n")
    plain = _config("agents:\n  a: {display_name: A}\n")
    model = ModelConfig(provider="openai", id="x")

    assert off.settings_for("a").compaction.budget(model) is None
    assert plain.settings_for("a").compaction.budget(model) == 12000


def test_meanings_compaction_model_must_exist():
    with pytest.raises(ConfigError, match=r"agents.a.compaction.model: unknown model 'huge'"):
        _config(_MODELS + "agents:\n  a: {display_name: A, compaction: {model: huge}}\n")


def test_meanings_timezone_is_told_only_when_set():
    zoned = _config(
        "timezone: Europe/Berlin\nagents:\n  a: {display_name: A}\n  b: {display_name: B, timezone: Asia/Tokyo}\n"
    )
    plain = _config("agents:\n  a: {display_name: A, show_tool_calls: true}\n")

    assert zoned.settings_for("a").timezone == "Europe/Berlin"
    assert zoned.settings_for("b").timezone == "Asia/Tokyo"
    assert plain.settings_for("a").timezone is None


@pytest.mark.parametrize("zone", ["Europe/Berlinn", "UTC+2", "europe"])
def test_meanings_an_unknown_timezone_is_refused(zone: str):
    with pytest.raises(ConfigError, match="IANA"):
        _config(f"agents:\n  a: {{display_name: A, timezone: '{zone}'}}\n")


@pytest.mark.parametrize(
    ("written", "read"),
    [("true", "all"), ("false", "never"), ("[]", "never"), ("['@a:x', '@*:y']", ("@a:x", "@*:y")), ("never", "never")],
)
def test_meanings_accept_invites_in_every_form(written: str, read: object):
    config = _config(
        f"agents:\n  a: {{display_name: A, accept_invites: {written}}}\nrouter: {{accept_invites: {written}}}\n"
    )

    assert config.agents["a"].accept_invites == read
    assert config.router.accept_invites == read


def test_meanings_agent_names_may_have_capitals():
    config = _config("agents:\n  MyHelper: {display_name: Helper}\n")

    assert list(config.agents) == ["MyHelper"]


def test_meanings_room_thread_modes_win_over_the_agent_s_mode():
    config = _config("agents:\n  a: {display_name: A, thread_mode: thread, room_thread_modes: {lobby: room}}\n")

    assert config.thread_mode("a", {"lobby", "!x:s"}) == "room"
    assert config.thread_mode("a", {"other"}) == "thread"


def test_meanings_rooms_take_room_defaults_where_they_set_nothing():
    config = _config(
        "room_defaults: {join_policy: knock, listed: true, encrypted: true, invite_users: ['@p:x'], admins: ['@q:x']}\n"
        "rooms:\n  lobby: {display_name: The Lobby, description: talk}\n"
        "  quiet: {join_policy: invite, listed: false, encrypted: false, invite_users: [], admins: ['@r:x']}\n"
    )

    lobby = config.rooms["lobby"].state(config.room_defaults)
    quiet = config.rooms["quiet"].state(config.room_defaults)

    assert (lobby.name, lobby.topic, lobby.join_policy, lobby.listed, lobby.encrypted) == (
        "The Lobby",
        "talk",
        "knock",
        True,
        True,
    )
    assert (lobby.invite_users, lobby.admins) == (("@p:x",), ("@q:x",))
    assert (quiet.join_policy, quiet.listed, quiet.encrypted, quiet.invite_users, quiet.admins) == (
        "invite",
        False,
        False,
        (),
        ("@r:x",),
    )


def test_meanings_room_admins_are_concrete_ids():
    with pytest.raises(ConfigError, match="concrete Matrix user ids"):
        _config("room_defaults: {admins: ['@*:x']}\n")


def test_meanings_models_keep_display_name_icon_and_pricing():
    config = _config(
        "models:\n  default: {provider: openai, id: m, display_name: ' Big One ', icon: MXC://server/abc,"
        " pricing: {input: 1.5, output: 6}}\n"
    )
    model = config.models["default"]

    assert (model.display_name, model.icon) == ("Big One", "mxc://server/abc")
    assert model.pricing is not None and (model.pricing.input, model.pricing.cache_read) == (1.5, None)


@pytest.mark.parametrize("icon", ["/etc/icon.png", "https://x/icon.png", "mxc://server", "mxc://server/a/b"])
def test_meanings_a_model_icon_elsewhere_is_refused(icon: str):
    with pytest.raises(ConfigError, match="icon"):
        _config(f"models:\n  default: {{provider: openai, id: m, icon: '{icon}'}}\n")


def test_meanings_prompts_unknown_to_mindroom_and_unknown_fields_are_errors():
    with pytest.raises(ConfigError, match="unknown prompt names"):
        _config("prompts: {DATETIME_CONTEXT: x}\n")
    with pytest.raises(ConfigError, match="unknown fields"):
        _config("prompts: {DATETIME_CONTEXT_TEMPLATE: 'Day {day}'}\n")


def test_meanings_voice_stt_needs_a_host_for_a_compatible_service():
    config = _config("voice: {enabled: true, stt: {provider: openai_compatible, host: 'http://stt:9000', model: w}}\n")

    assert config.voice.stt is not None and config.voice.stt.base_url == "http://stt:9000/v1"
    with pytest.raises(ConfigError, match="needs host"):
        _config("voice: {stt: {provider: openai_compatible, model: w}}\n")


@pytest.mark.parametrize("field", ["model", "api_key", "base_url", "client"])
def test_meanings_voice_stt_extra_kwargs_may_not_respell_the_connection(field: str):
    with pytest.raises(ConfigError, match=f"voice.stt.extra_kwargs.*must not set {field}"):
        _config(f"voice: {{stt: {{model: w, extra_kwargs: {{{field}: x}}}}}}\n")


def test_meanings_voice_stt_extra_kwargs_take_a_near_miss_name():
    config = _config("voice: {stt: {model: w, extra_kwargs: {language: de, model_hint: x, base_url_x: y}}}\n")

    assert config.voice.stt is not None
    assert config.voice.stt.extra_kwargs == {"language": "de", "model_hint": "x", "base_url_x": "y"}


def test_meanings_aliases_map_a_bridged_account_to_its_person():
    config = _config("authorization:\n  aliases: {'@alice:x': ['@tg_1:x', '@wa_2:x']}\n")

    assert config.authorization.person("@tg_1:x") == "@alice:x"
    assert config.authorization.person("@tg_10:x") == "@tg_10:x"
    with pytest.raises(ConfigError, match="a person and an alias"):
        _config("authorization:\n  aliases: {'@a:x': ['@b:x'], '@b:x': ['@c:x']}\n")


def test_meanings_file_memory_is_accepted():
    config = _config(
        "memory: {backend: file}\nagents:\n  a: {display_name: A}\n  b: {display_name: B, memory_backend: mem0}\n"
    )

    assert (config.memory_backend("a"), config.memory_backend("b")) == ("file", "mem0")
    assert (config.memory_enabled("a"), config.memory_enabled("b")) == (False, True)
