"""Every provider's config builds the right agno model class with the right arguments.

Each recipe is checked as data (class and arguments), and built into the real agno class wherever the
provider's client package is installed (OpenAI-compatible providers always are).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest

from mindroom.ai import ModelConfigError, build_model
from mindroom.ai.failures import CALL_POLICY_ATTRIBUTE
from mindroom.ai.model_recipes import (
    CODEX_BASE_URL,
    DEFAULT_STREAM_IDLE_TIMEOUT_S,
    KIMI_BASE_URL,
    LLAMA_CPP_BASE_URL,
    PLACEHOLDER_API_KEY,
    model_recipe,
)
from mindroom.ai.resilience import CallPolicy
from mindroom.config.main import ModelConfig
from mindroom.config.providers import PROVIDERS

KEY = "k-0123456789"


def recipe(provider: str, model_id: str = "m", env: dict[str, str] | None = None, **fields: Any):
    return model_recipe(ModelConfig(provider=provider, id=model_id, **fields), env or {}, "test")


def built(provider: str, model_id: str = "m", env: dict[str, str] | None = None, **fields: Any) -> Any:
    """The real agno model, when the provider's packages are installed (else the test is skipped)."""
    for package in PROVIDERS[provider].packages:
        if importlib.util.find_spec(package.split(".")[0]) is None or importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    return build_model(ModelConfig(provider=provider, id=model_id, **fields), env=env or {})


def classes(model: Any) -> list[str]:
    return [f"{cls.__module__}.{cls.__name__}" for cls in type(model).__mro__]


@pytest.mark.parametrize(
    ("provider", "env", "fields", "module", "class_name", "expected"),
    [
        ("anthropic", {"ANTHROPIC_API_KEY": KEY}, {}, "agno.models.anthropic", "Claude",
         {"api_key": KEY, "client_params": {"max_retries": 0}}),
        ("anthropic", {"ANTHROPIC_BASE_URL": "http://proxy"}, {"api_key": "own"}, "agno.models.anthropic", "Claude",
         {"api_key": "own", "client_params": {"max_retries": 0, "base_url": "http://proxy"}}),
        ("azure", {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com",
                   "AZURE_OPENAI_DEPLOYMENT": "dep"}, {}, "agno.models.azure.openai_chat", "AzureOpenAI",
         {"api_key": KEY, "azure_endpoint": "https://x.openai.azure.com", "azure_deployment": "dep",
          "api_version": "2024-10-21", "client_params": {"max_retries": 0}}),
        ("bedrock_claude", {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1"}, {},
         "agno.models.aws.claude", "Claude",
         {"aws_access_key": "a", "aws_secret_key": "s", "aws_region": "eu-west-1",
          "client_params": {"max_retries": 0}}),
        ("cerebras", {"CEREBRAS_API_KEY": KEY}, {}, "agno.models.cerebras.cerebras_openai", "CerebrasOpenAI",
         {"api_key": KEY, "base_url": "https://api.cerebras.ai/v1", "max_retries": 0}),
        ("deepseek", {"DEEPSEEK_API_KEY": KEY}, {}, "agno.models.deepseek", "DeepSeek",
         {"api_key": KEY, "max_retries": 0}),
        ("google", {"GOOGLE_API_KEY": KEY}, {"temperature": 0.3}, "agno.models.google", "Gemini",
         {"api_key": KEY, "temperature": 0.3}),
        ("groq", {"GROQ_API_KEY": KEY}, {}, "agno.models.groq", "Groq", {"api_key": KEY, "max_retries": 0}),
        ("llama_cpp", {}, {}, "agno.models.llama_cpp", "LlamaCpp",
         {"api_key": PLACEHOLDER_API_KEY, "base_url": LLAMA_CPP_BASE_URL, "max_retries": 0}),
        ("ollama", {"OLLAMA_HOST": "http://gpu:11434"}, {"temperature": 0.1}, "agno.models.ollama", "Ollama",
         {"host": "http://gpu:11434", "api_key": None, "options": {"temperature": 0.1}}),
        ("openrouter", {"OPENROUTER_API_KEY": KEY}, {}, "agno.models.openrouter", "OpenRouter",
         {"api_key": KEY, "max_retries": 0}),
        ("vertexai_claude", {"ANTHROPIC_VERTEX_PROJECT_ID": "p", "CLOUD_ML_REGION": "us-east5"}, {},
         "agno.models.vertexai.claude", "Claude",
         {"project_id": "p", "region": "us-east5", "client_params": {"max_retries": 0}}),
        ("zai", {"ZAI_API_KEY": KEY}, {}, "agno.models.openai.like", "OpenAILike",
         {"api_key": KEY, "base_url": "https://api.z.ai/api/paas/v4", "max_retries": 0}),
        ("synthetic", {}, {"extra_kwargs": {"seed": 7}}, "mindroom.ai.synthetic", "SyntheticModel", {"seed": 7}),
        ("offline", {}, {}, "mindroom.ai.offline", "OfflineModel", {}),
    ],
)  # fmt: skip
def test_model_recipe_per_provider(provider, env, fields, module, class_name, expected):
    made = recipe(provider, "model-x", env, **fields)

    assert (made.module, made.class_name) == (module, class_name)
    assert made.kwargs == {"id": "model-x", **expected}
    model = built(provider, "model-x", env, **fields)
    assert f"{module}.{class_name}" in classes(model) or any(c.endswith(f".{class_name}") for c in classes(model))
    assert model.id == "model-x"
    for name, value in expected.items():
        if name != "client_params":
            assert getattr(model, name) == value, name


@pytest.mark.parametrize(
    ("model_id", "fields", "class_name"),
    [
        ("gpt-4o-mini", {}, "OpenAIChat"),
        ("gpt-5.4-mini", {}, "OpenAIResponses"),  # Responses for the models that need it, on OpenAI itself
        ("gpt-6", {"api": "chat_completions"}, "OpenAIChat"),
        ("gpt-4o", {"api": "responses"}, "OpenAIResponses"),
        ("gpt-5.4", {"host": "http://127.0.0.1:9/v1"}, "OpenAILike"),  # a custom endpoint speaks chat
    ],
)
def test_openai_api_choice(model_id, fields, class_name):
    model = built("openai", model_id, {"OPENAI_API_KEY": KEY}, **fields)

    assert type(model).__name__ == class_name
    assert model.max_retries == 0  # the SDK's own retries are off: ours count


def test_codex_borrows_the_codex_cli_login(tmp_path: Path):
    claims = base64.urlsafe_b64encode(json.dumps({"exp": time.time() + 3600}).encode()).decode().rstrip("=")
    token = f"h.{claims}.s"
    (tmp_path / "auth.json").write_text(json.dumps({"tokens": {"access_token": token, "account_id": "acct"}}))

    model = built("codex", "openai-codex/gpt-5.5", {"CODEX_HOME": str(tmp_path)})

    assert type(model).__name__ == "OpenAIResponses"
    assert (model.id, model.api_key, model.base_url, model.store) == ("gpt-5.5", token, CODEX_BASE_URL, False)
    assert model.default_headers == {"chatgpt-account-id": "acct"}


def test_codex_with_an_expired_login_says_how_to_sign_in(tmp_path: Path):
    claims = base64.urlsafe_b64encode(json.dumps({"exp": 1}).encode()).decode().rstrip("=")
    (tmp_path / "auth.json").write_text(json.dumps({"tokens": {"access_token": f"h.{claims}.s"}}))

    with pytest.raises(ModelConfigError, match="codex login"):
        recipe("codex", env={"CODEX_HOME": str(tmp_path)})


def test_kimi_borrows_the_kimi_cli_login(tmp_path: Path):
    credentials = tmp_path / "credentials" / "kimi-code.json"
    credentials.parent.mkdir()
    credentials.write_text(json.dumps({"access_token": "kimi-token", "expires_at": time.time() + 3600}))

    model = built("kimi", "kimi-code/k3", {"KIMI_CODE_HOME": str(tmp_path)})

    assert (type(model).__name__, model.id, model.api_key, model.base_url) == (
        "OpenAILike",
        "k3",
        "kimi-token",
        KIMI_BASE_URL,
    )


@pytest.mark.parametrize(
    ("provider", "variable"),
    [("anthropic", "ANTHROPIC_API_KEY"), ("deepseek", "DEEPSEEK_API_KEY"), ("google", "GOOGLE_API_KEY"),
     ("groq", "GROQ_API_KEY"), ("openrouter", "OPENROUTER_API_KEY"), ("zai", "ZAI_API_KEY"),
     ("cerebras", "CEREBRAS_API_KEY"), ("azure", "AZURE_OPENAI_API_KEY")],
)  # fmt: skip
def test_missing_key_names_the_variable(provider, variable):
    with pytest.raises(ModelConfigError, match=variable):
        recipe(provider)


def test_stream_idle_timeout_defaults():
    hosted = recipe("anthropic", env={"ANTHROPIC_API_KEY": KEY})
    local = recipe("ollama")
    custom = recipe("openai", extra_kwargs={"base_url": "http://127.0.0.1:1/v1"})
    by_env = recipe("openai", env={"OPENAI_BASE_URL": "http://gateway/v1"})
    chosen = recipe("anthropic", env={"ANTHROPIC_API_KEY": KEY}, stream_idle_timeout_seconds=12)
    disabled = recipe("anthropic", env={"ANTHROPIC_API_KEY": KEY}, stream_idle_timeout_seconds=0)

    assert hosted.stream_idle_timeout_s == DEFAULT_STREAM_IDLE_TIMEOUT_S
    assert local.stream_idle_timeout_s is None and custom.stream_idle_timeout_s is None
    assert by_env.stream_idle_timeout_s is None
    assert chosen.stream_idle_timeout_s == 12 and disabled.stream_idle_timeout_s is None


def test_max_retries_is_ours_and_reaches_the_built_model():
    model = built("openai", "gpt-4o", {"OPENAI_API_KEY": KEY}, extra_kwargs={"max_retries": 5})

    assert getattr(model, CALL_POLICY_ATTRIBUTE) == CallPolicy(5, DEFAULT_STREAM_IDLE_TIMEOUT_S)
    assert model.max_retries == 0
    with pytest.raises(ModelConfigError, match="max_retries"):
        recipe("openai", env={"OPENAI_API_KEY": KEY}, extra_kwargs={"max_retries": -1})


def test_building_an_openai_model_imports_no_other_providers_sdk():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mindroom.ai.models import build_model\n"
        "from mindroom.config.main import ModelConfig\n"
        "build_model(ModelConfig(provider='openai', id='gpt-4o'), env={'OPENAI_API_KEY': 'k'})\n"
        "print(sorted(m for m in ('anthropic', 'ollama', 'google.genai', 'groq', 'boto3') if m in sys.modules))\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"
