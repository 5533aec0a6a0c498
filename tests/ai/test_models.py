"""Building agno models from config: provider choice, keys from config or env, clear errors."""

from __future__ import annotations

import importlib.util

import pytest
from agno.models.openai import OpenAIChat
from agno.models.openai.like import OpenAILike

import mindroom.ai
from mindroom.ai import PLACEHOLDER_API_KEY, ModelConfigError, OfflineModel, build_model
from mindroom.config.main import ModelConfig

SECRET = "sk-test-0123456789abcdefghij"


def test_build_model_openai_uses_key_from_env() -> None:
    model = build_model(ModelConfig(id="gpt-test", temperature=0.2), env={"OPENAI_API_KEY": SECRET})

    assert isinstance(model, OpenAIChat)
    assert not isinstance(model, OpenAILike)
    assert model.id == "gpt-test"
    assert model.api_key == SECRET
    assert model.temperature == 0.2


def test_build_model_openai_config_key_wins_over_env() -> None:
    model = build_model(ModelConfig(id="gpt-test", api_key="from-config"), env={"OPENAI_API_KEY": SECRET})

    assert isinstance(model, OpenAIChat)
    assert model.api_key == "from-config"


def test_build_model_openai_without_key_names_model_and_variable() -> None:
    with pytest.raises(ModelConfigError) as caught:
        build_model(ModelConfig(id="gpt-test"), env={}, name="default")

    assert caught.value.model == "default"
    assert "OPENAI_API_KEY" in str(caught.value)


def test_build_model_openai_key_in_extra_kwargs_is_used_once() -> None:
    config = ModelConfig(id="gpt-test", api_key="from-config", extra_kwargs={"api_key": "from-options"})

    assert build_model(config, env={}).api_key == "from-config"  # type: ignore[attr-defined]
    assert build_model(ModelConfig(id="gpt-test", extra_kwargs={"api_key": "k"}), env={}).api_key == "k"  # type: ignore[attr-defined]


def test_build_model_openai_base_url_uses_openai_like_with_placeholder_key() -> None:
    config = ModelConfig(id="local", extra_kwargs={"base_url": "http://127.0.0.1:9/v1", "timeout": 3.0})

    model = build_model(config, env={})

    assert isinstance(model, OpenAILike)
    assert model.base_url == "http://127.0.0.1:9/v1"
    assert model.api_key == PLACEHOLDER_API_KEY
    assert model.timeout == 3.0


def test_build_model_openai_host_is_base_url() -> None:
    model = build_model(ModelConfig(id="local", host="http://127.0.0.1:9/v1"), env={"OPENAI_API_KEY": SECRET})

    assert isinstance(model, OpenAILike)
    assert model.base_url == "http://127.0.0.1:9/v1"
    assert model.api_key == SECRET


def test_build_model_unknown_option_is_config_error_without_secret() -> None:
    config = ModelConfig(id="gpt-test", api_key=SECRET, extra_kwargs={"no_such_option": 1})

    with pytest.raises(ModelConfigError, match="no_such_option") as caught:
        build_model(config, env={})

    assert SECRET not in str(caught.value)


def test_build_model_offline_needs_nothing() -> None:
    model = build_model(ModelConfig(provider="offline", id="demo"), env={})

    assert isinstance(model, OfflineModel)
    assert model.id == "demo"


def test_build_model_anthropic_names_missing_package_or_key() -> None:
    config = ModelConfig(provider="anthropic", id="claude-test")

    with pytest.raises(ModelConfigError) as caught:
        build_model(config, env={}, name="claude")

    assert caught.value.model == "claude"
    if importlib.util.find_spec("anthropic") is None:
        assert "`anthropic` package" in caught.value.problem
    else:
        assert "ANTHROPIC_API_KEY" in caught.value.problem


def test_build_model_ollama_without_package_names_package() -> None:
    if importlib.util.find_spec("ollama") is not None:
        model = build_model(ModelConfig(provider="ollama", id="llama"), env={"OLLAMA_HOST": "http://127.0.0.1:9"})
        assert getattr(model, "host", None) == "http://127.0.0.1:9"
        return

    with pytest.raises(ModelConfigError, match=r"`ollama` package"):
        build_model(ModelConfig(provider="ollama", id="llama"), env={})


def _isort_style(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def test_ai_all_is_sorted_and_documented() -> None:
    assert list(mindroom.ai.__all__) == sorted(mindroom.ai.__all__, key=_isort_style)
    for name in mindroom.ai.__all__:
        value = getattr(mindroom.ai, name)
        if callable(value):
            assert value.__doc__, name
