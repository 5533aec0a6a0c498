"""Which model provider the environment offers."""

from __future__ import annotations

from mindroom.config.providers import detect_provider, provider_env_defaults


def test_detect_provider_skips_a_provider_whose_package_is_missing(monkeypatch):
    monkeypatch.setattr("mindroom.config.providers._installed", lambda package: package is None)

    choice = detect_provider({"ANTHROPIC_API_KEY": "x" * 20})

    assert choice.is_offline
    assert choice.skipped == (("ANTHROPIC_API_KEY", "anthropic"),)


def test_provider_env_defaults_respect_an_explicit_choice():
    assert provider_env_defaults({}) == {}
    assert provider_env_defaults({"OPENAI_API_KEY": "k"}) == {
        "MINDROOM_MODEL_PROVIDER": "openai",
        "MINDROOM_MODEL_ID": "gpt-4o-mini",
    }
    assert provider_env_defaults({"OPENAI_API_KEY": "k", "MINDROOM_MODEL_PROVIDER": "offline"}) == {}
