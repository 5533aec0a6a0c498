"""`models:` entries: MindRoom's provider names and keys, misspellings and missing client packages caught at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.config.loading import parse_config_text
from mindroom.config.main import ModelConfig
from mindroom.config.providers import PROVIDERS, missing_packages, provider_route
from mindroom.errors import ConfigError

MINDROOM_PROVIDERS = {
    "anthropic", "azure", "bedrock_claude", "cerebras", "codex", "deepseek", "google", "groq", "kimi", "llama_cpp",
    "ollama", "openai", "openrouter", "synthetic", "vertexai_claude", "zai",
}  # fmt: skip


def load(models: str):
    return parse_config_text(f"models:\n{models}", "config.yaml", {})


def test_every_mindroom_provider_is_known():
    assert set(PROVIDERS) >= MINDROOM_PROVIDERS


@pytest.mark.parametrize(
    ("written", "canonical"),
    [("Gemini", "google"), ("OpenAI", "openai"), ("openai-codex", "codex"), ("Kimi-Code", "kimi"),
     (" llama-cpp ", "llama_cpp"), ("Bedrock-Claude", "bedrock_claude")],
)  # fmt: skip
def test_provider_spelling_and_aliases_are_normalised(written, canonical):
    assert provider_route(written) == canonical
    assert ModelConfig(provider=written, id="m").provider == canonical


def test_misspelt_provider_is_rejected_at_load_with_the_choices():
    with pytest.raises(ConfigError) as caught:
        load("  default:\n    provider: antropic\n    id: claude\n")

    message = str(caught.value)
    assert "models.default.provider (line 3)" in message
    assert "unknown provider 'antropic'" in message and "anthropic" in message and "gemini = google" in message


def test_missing_client_package_is_a_config_error_naming_model_provider_and_extra(monkeypatch):
    monkeypatch.setattr("mindroom.config.providers._installed", lambda package: package != "google.genai")

    with pytest.raises(ConfigError) as caught:
        load("  default:\n    provider: openai\n    id: gpt\n  smart:\n    provider: gemini\n    id: gemini-x\n")

    message = str(caught.value)
    assert "model 'smart'" in message and "provider 'google'" in message
    assert "google-genai" in message and f"pip install -e '{Path(__file__).resolve().parents[2]}[google]'" in message
    assert missing_packages("gemini") == ("google-genai",)


def test_mindroom_model_keys_load():
    config = load(
        "  default:\n    provider: openai\n    id: gpt-5.4\n    api: responses\n    context_window: 200000\n"
        "    stream_idle_timeout_seconds: 45\n    api_key: '  '\n    extra_kwargs: {max_retries: 1}\n"
    )

    model = config.models["default"]
    assert (model.api, model.context_window, model.stream_idle_timeout_seconds) == ("responses", 200000, 45)
    assert model.api_key is None  # blank means: use the provider's variable


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("provider: anthropic\n    id: c\n    api: responses", "only supported for provider openai"),
        ("provider: openai\n    id: g\n    api: assistants", "api"),
        ("provider: openai\n    id: g\n    context_window: 0", "context_window"),
        ("provider: openai\n    id: g\n    stream_idle_timeout_seconds: -1", "stream_idle_timeout_seconds"),
        ("provider: openai\n    id: g\n    pricing_typo: 1", "pricing_typo"),
    ],
)
def test_invalid_model_keys_are_rejected(body, problem):
    with pytest.raises(ConfigError, match=problem):
        load(f"  default:\n    {body}\n")
