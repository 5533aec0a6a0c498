"""`voice.tts` and `voice.replies`: the speech service of voice replies, and which agents answer in voice."""

from __future__ import annotations

import pytest

from mindroom.config.loading import parse_config_text
from mindroom.config.main import Config
from mindroom.errors import ConfigError


def _config(voice: str) -> Config:
    return parse_config_text(f"voice: {voice}\n", "config.yaml", {})


def test_voice_tts_takes_mindrooms_service_keys_and_its_own():
    config = _config(
        "{tts: {provider: openai_compatible, host: 'http://kokoro:8880', model: kokoro, api_key: k,"
        " extra_kwargs: {speed: 1.2}, voice: af_sky, max_chars: 300}, replies: true}"
    )

    tts = config.voice.tts
    assert tts is not None and tts.base_url == "http://kokoro:8880/v1"
    assert (tts.model, tts.voice, tts.max_chars, tts.extra_kwargs) == ("kokoro", "af_sky", 300, {"speed": 1.2})
    assert config.voice.replies_for("anyone")


def test_voice_tts_defaults_are_openais_speech_model_and_voice():
    tts = _config("{tts: {}}").voice.tts

    assert tts is not None and (tts.provider, tts.model, tts.voice, tts.max_chars) == (
        "openai", "gpt-4o-mini-tts", "alloy", 600
    )  # fmt: skip


@pytest.mark.parametrize(
    ("voice", "message"),
    [
        pytest.param("{replies: true}", "voice.replies needs voice.tts", id="replies-without-tts"),
        pytest.param("{replies: [helper]}", "voice.replies needs voice.tts", id="named-replies-without-tts"),
        pytest.param("{tts: {provider: openai_compatible}}", "voice.tts.*needs host", id="compatible-without-host"),
        pytest.param("{tts: {host: 'ftp://x'}}", "voice.tts.*http", id="not-http"),
        pytest.param("{tts: {voices: nova}}", "voice.tts.voices", id="key-with-a-suffix"),
        pytest.param("{tts: {max_chars: 19}}", "voice.tts.max_chars", id="too-short-to-speak"),
        pytest.param("{tts: {extra_kwargs: {model: x}}}", "must not set model", id="respelled-model"),
        pytest.param("{reply: true}", "voice.reply", id="near-miss-key"),
    ],
)
def test_voice_refuses_what_cannot_speak(voice: str, message: str):
    with pytest.raises(ConfigError, match=message):
        _config(voice)


def test_voice_replies_named_are_for_those_agents_only():
    text = "agents: {helper: {display_name: H}, helper2: {display_name: H2}}\nvoice: {tts: {}, replies: [helper]}\n"
    voice = parse_config_text(text, "config.yaml", {}).voice

    assert voice.replies_for("helper")
    assert not voice.replies_for("helper2") and not voice.replies_for("Helper")


def test_voice_replies_are_off_by_default_even_with_a_service():
    assert not _config("{tts: {}}").voice.replies_for("helper")
    assert not _config("{}").voice.replies_for("helper")


@pytest.mark.parametrize("name", ["helper2", "Helper", "helpe", "router"])
def test_voice_replies_naming_no_agent_or_team_is_an_error(name: str):
    text = f"agents: {{helper: {{display_name: H}}}}\nvoice: {{tts: {{}}, replies: [helper, {name}]}}\n"

    with pytest.raises(ConfigError, match=f"voice.replies: '{name}' is no agent or team \\(known: helper\\)"):
        parse_config_text(text, "config.yaml", {})


def test_voice_replies_may_name_a_team():
    text = (
        "agents: {a: {display_name: A}, b: {display_name: B}}\n"
        "teams: {duo: {display_name: Duo, role: Both, agents: [a, b]}}\n"
        "voice: {tts: {}, replies: [duo, a]}\n"
    )

    assert parse_config_text(text, "config.yaml", {}).voice.replies_for("duo")
