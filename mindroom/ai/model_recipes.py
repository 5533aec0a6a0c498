"""Which agno model class a `models:` entry builds, with which arguments: one recipe per provider.

Recipes import nothing of agno or a provider's SDK; `mindroom.ai.models` imports the class a recipe names
when a model is first built, so a daemon whose agents all use OpenAI never loads another provider's SDK.
Keys come from the model's `api_key` (or `extra_kwargs.api_key`), then the provider's variable. Retries
are ours (`max_retries` in `extra_kwargs`, default 2), so the SDKs' own retries are turned off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.ai.cli_logins import codex_login, kimi_login
from mindroom.ai.errors import ModelConfigError
from mindroom.config.main import ModelConfig
from mindroom.config.providers import PROVIDERS

__all__ = [
    "CODEX_BASE_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_STREAM_IDLE_TIMEOUT_S",
    "KIMI_BASE_URL",
    "LLAMA_CPP_BASE_URL",
    "PLACEHOLDER_API_KEY",
    "ModelRecipe",
    "model_recipe",
]

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to OpenAI-compatible servers at a custom `base_url` when no key is configured (local servers ignore it)."""
DEFAULT_MAX_RETRIES = 2
"""How often a model call that hit a rate limit, a 5xx or a dropped connection is tried again."""
DEFAULT_STREAM_IDLE_TIMEOUT_S = 300.0
"""How long a hosted provider's stream may stay silent before it counts as stalled."""
CODEX_BASE_URL = "https://chatgpt.com/backend-api/codex"
KIMI_BASE_URL = "https://api.kimi.com/coding/v1"
LLAMA_CPP_BASE_URL = "http://127.0.0.1:8080/v1"
_ZAI_BASE_URL = "https://api.z.ai/api/paas/v4"
_CEREBRAS_HOST = "https://api.cerebras.ai"
_RESPONSES_MODEL = re.compile(r"gpt-(\d+)(?:\.(\d+))?")
_RESPONSES_FROM = (5, 4)


@dataclass(frozen=True, slots=True)
class ModelRecipe:
    """An agno model class (by module and name), its keyword arguments, and how its calls are retried."""

    module: str
    class_name: str
    kwargs: Mapping[str, Any]
    max_retries: int = DEFAULT_MAX_RETRIES
    stream_idle_timeout_s: float | None = None
    """None: a stream may stay silent as long as it likes."""


def model_recipe(model: ModelConfig, env: Mapping[str, str], label: str) -> ModelRecipe:
    """The recipe for one config entry; `ModelConfigError` (naming `label`) when a key or endpoint is missing."""
    options = dict(model.extra_kwargs)
    idle_timeout = _idle_timeout(model, env, options)
    retries = options.pop("max_retries", DEFAULT_MAX_RETRIES)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ModelConfigError(label, "extra_kwargs.max_retries must be a whole number, 0 or more")
    module, class_name, kwargs = _RECIPES[model.provider](_Entry(model, env, label, options))
    return ModelRecipe(module, class_name, kwargs, retries, idle_timeout)


def _idle_timeout(model: ModelConfig, env: Mapping[str, str], options: Mapping[str, Any]) -> float | None:
    if model.stream_idle_timeout_seconds is not None:
        return model.stream_idle_timeout_seconds or None
    provider = PROVIDERS[model.provider]
    custom = model.host or options.get("base_url") or (options.get("client_params") or {}).get("base_url")
    if provider.local or custom or (provider.endpoint_env and env.get(provider.endpoint_env)):
        return None
    return DEFAULT_STREAM_IDLE_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class _Entry:
    """One entry being turned into a recipe: `options` are its `extra_kwargs`, consumed as they are read."""

    model: ModelConfig
    env: Mapping[str, str]
    label: str
    options: dict[str, Any]

    def key(self, variable: str | None, *, required: bool = True) -> str | None:
        option = self.options.pop("api_key", None)
        key = self.model.api_key or option or (self.env.get(variable) if variable else None)
        if not key and required:
            where = f" or the {variable} environment variable" if variable else ""
            raise ModelConfigError(self.label, f"needs an API key: set `api_key`{where}")
        return key or None

    def endpoint(self, variable: str | None = None) -> str | None:
        return self.options.pop("base_url", None) or self.model.host or (self.env.get(variable) if variable else None)

    def args(self, **fixed: Any) -> dict[str, Any]:
        """`fixed`, then the remaining options, then the temperature unless an option set it."""
        kwargs = {**{k: v for k, v in fixed.items() if v is not None}, **self.options}
        if self.model.temperature is not None:
            kwargs.setdefault("temperature", self.model.temperature)
        return kwargs


_Recipe = tuple[str, str, dict[str, Any]]


def _uses_responses(model: ModelConfig, base_url: str | None) -> bool:
    """`api: responses`, or (unset) a gpt-5.4-or-later model on OpenAI's own endpoint."""
    if model.api is not None:
        return model.api == "responses"
    match = _RESPONSES_MODEL.search(model.id)
    return base_url is None and match is not None and (int(match[1]), int(match[2] or 0)) >= _RESPONSES_FROM


def _openai(entry: _Entry) -> _Recipe:
    base_url = entry.endpoint("OPENAI_BASE_URL")
    key = entry.key("OPENAI_API_KEY", required=base_url is None) or PLACEHOLDER_API_KEY
    args = entry.args(id=entry.model.id, api_key=key, base_url=base_url, max_retries=0)
    if _uses_responses(entry.model, base_url):
        return "agno.models.openai.responses", "OpenAIResponses", args
    if base_url is None:
        return "agno.models.openai.chat", "OpenAIChat", args
    return "agno.models.openai.like", "OpenAILike", args


def _compatible(module: str, class_name: str, variable: str | None, default_url: str | None = None) -> Any:
    """An OpenAI-compatible provider: its key variable and (for classes without one built in) its endpoint."""

    def recipe(entry: _Entry) -> _Recipe:
        key = entry.key(variable, required=variable is not None) or PLACEHOLDER_API_KEY
        base_url = entry.endpoint(PROVIDERS[entry.model.provider].endpoint_env) or default_url
        return module, class_name, entry.args(id=entry.model.id, api_key=key, base_url=base_url, max_retries=0)

    return recipe


def _cerebras(entry: _Entry) -> _Recipe:
    key = entry.key("CEREBRAS_API_KEY")
    host = entry.endpoint("CEREBRAS_BASE_URL") or _CEREBRAS_HOST
    args = entry.args(id=entry.model.id, api_key=key, base_url=f"{host.rstrip('/')}/v1", max_retries=0)
    return "agno.models.cerebras.cerebras_openai", "CerebrasOpenAI", args


def _groq(entry: _Entry) -> _Recipe:
    key = entry.key("GROQ_API_KEY")
    args = entry.args(id=entry.model.id, api_key=key, base_url=entry.endpoint("GROQ_BASE_URL"), max_retries=0)
    return "agno.models.groq", "Groq", args


def _azure(entry: _Entry) -> _Recipe:
    token = entry.options.get("azure_ad_token") or entry.options.get("azure_ad_token_provider")
    key = entry.key("AZURE_OPENAI_API_KEY", required=not token)
    endpoint = entry.options.pop("azure_endpoint", None) or entry.env.get("AZURE_OPENAI_ENDPOINT")
    if not endpoint and not entry.options.get("base_url"):
        raise ModelConfigError(
            entry.label, "needs an endpoint: set `extra_kwargs.azure_endpoint` or AZURE_OPENAI_ENDPOINT"
        )
    entry.options.setdefault("api_version", entry.env.get("AZURE_OPENAI_API_VERSION") or "2024-10-21")
    entry.options.setdefault("azure_deployment", entry.env.get("AZURE_OPENAI_DEPLOYMENT"))
    params = {"max_retries": 0, **(entry.options.pop("client_params", None) or {})}
    args = entry.args(id=entry.model.id, api_key=key, azure_endpoint=endpoint, client_params=params)
    return "agno.models.azure.openai_chat", "AzureOpenAI", args


def _codex(entry: _Entry) -> _Recipe:
    model_id = entry.model.id.strip().removeprefix("openai-codex/")
    key = entry.key(None, required=False)
    headers = dict(entry.options.pop("default_headers", None) or {})
    if key is None:
        try:
            login = codex_login(entry.env)
        except ValueError as exc:
            raise ModelConfigError(entry.label, f"needs `api_key` or a Codex CLI login ({exc})") from None
        key = login.token
        if login.account_id:
            headers.setdefault("chatgpt-account-id", login.account_id)
    entry.options.setdefault("store", False)  # the ChatGPT backend keeps no responses
    base_url = entry.endpoint() or CODEX_BASE_URL
    args = entry.args(id=model_id, api_key=key, base_url=base_url, default_headers=headers or None, max_retries=0)
    return "agno.models.openai.responses", "OpenAIResponses", args


def _kimi(entry: _Entry) -> _Recipe:
    key = entry.key(None, required=False)
    if key is None:
        try:
            key = kimi_login(entry.env).token
        except ValueError as exc:
            raise ModelConfigError(entry.label, f"needs `api_key` or a Kimi Code CLI login ({exc})") from None
    model_id = entry.model.id.strip().removeprefix("kimi-code/")
    base_url = entry.endpoint() or KIMI_BASE_URL
    args = entry.args(id=model_id, api_key=key, base_url=base_url, max_retries=0, provider="Kimi", name="Kimi")
    return "agno.models.openai.like", "OpenAILike", args


def _claude_params(entry: _Entry, base_url: str | None) -> dict[str, Any]:
    """The Anthropic client's options: no retries of its own, and the endpoint when one is set."""
    params = {"max_retries": 0, **(entry.options.pop("client_params", None) or {})}
    if base_url:
        params.setdefault("base_url", base_url)
    return params


def _anthropic(entry: _Entry) -> _Recipe:
    auth_token = entry.options.get("auth_token")
    key = entry.key("ANTHROPIC_API_KEY", required=not auth_token)
    params = _claude_params(entry, entry.endpoint("ANTHROPIC_BASE_URL"))
    return "agno.models.anthropic", "Claude", entry.args(id=entry.model.id, api_key=key, client_params=params)


def _bedrock_claude(entry: _Entry) -> _Recipe:
    env = entry.env
    for option, variable in (
        ("aws_access_key", "AWS_ACCESS_KEY_ID"),
        ("aws_secret_key", "AWS_SECRET_ACCESS_KEY"),
        ("aws_session_token", "AWS_SESSION_TOKEN"),
        ("aws_region", "AWS_REGION"),
    ):
        if entry.options.get(option) is None and env.get(variable):
            entry.options[option] = env[variable]
    if not (entry.options.get("aws_access_key") and entry.options.get("aws_secret_key")):
        raise ModelConfigError(
            entry.label, "needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION)"
        )
    params = _claude_params(entry, None)
    return "agno.models.aws.claude", "Claude", entry.args(id=entry.model.id, client_params=params)


def _vertexai_claude(entry: _Entry) -> _Recipe:
    env = entry.env
    entry.options.setdefault("project_id", env.get("ANTHROPIC_VERTEX_PROJECT_ID"))
    entry.options.setdefault("region", env.get("CLOUD_ML_REGION"))
    if not (entry.options["project_id"] and entry.options["region"]):
        raise ModelConfigError(
            entry.label,
            "needs a Google Cloud project and region: set `extra_kwargs.project_id` and `region`, "
            "or ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION",
        )
    base_url = entry.endpoint("ANTHROPIC_VERTEX_BASE_URL")
    params = _claude_params(entry, None)
    args = entry.args(id=entry.model.id, base_url=base_url, client_params=params)
    return "agno.models.vertexai.claude", "Claude", args


def _google(entry: _Entry) -> _Recipe:
    on_vertex = bool(entry.options.get("vertexai"))
    key = entry.key("GOOGLE_API_KEY", required=not on_vertex)
    return "agno.models.google", "Gemini", entry.args(id=entry.model.id, api_key=key)


def _ollama(entry: _Entry) -> _Recipe:
    host = entry.options.pop("host", None) or entry.model.host or entry.env.get("OLLAMA_HOST")
    key = entry.key("OLLAMA_API_KEY", required=False)
    options = dict(entry.options.pop("options", None) or {})
    if entry.model.temperature is not None:
        options.setdefault("temperature", entry.model.temperature)
    kwargs = {"id": entry.model.id, "host": host, "api_key": key, **entry.options}
    if options:
        kwargs["options"] = options
    return "agno.models.ollama", "Ollama", kwargs


def _builtin(module: str, class_name: str) -> Callable[[_Entry], _Recipe]:
    def recipe(entry: _Entry) -> _Recipe:
        entry.options.pop("api_key", None)  # a built-in model sends nothing anywhere
        return module, class_name, {"id": entry.model.id, **entry.options}

    return recipe


_RECIPES: dict[str, Callable[[_Entry], _Recipe]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "azure": _azure,
    "bedrock_claude": _bedrock_claude,
    "cerebras": _cerebras,
    "codex": _codex,
    "deepseek": _compatible("agno.models.deepseek", "DeepSeek", "DEEPSEEK_API_KEY"),
    "google": _google,
    "groq": _groq,
    "kimi": _kimi,
    "llama_cpp": _compatible("agno.models.llama_cpp", "LlamaCpp", None, LLAMA_CPP_BASE_URL),
    "ollama": _ollama,
    "openrouter": _compatible("agno.models.openrouter", "OpenRouter", "OPENROUTER_API_KEY"),
    "synthetic": _builtin("mindroom.ai.synthetic", "SyntheticModel"),
    "vertexai_claude": _vertexai_claude,
    "zai": _compatible("agno.models.openai.like", "OpenAILike", "ZAI_API_KEY", _ZAI_BASE_URL),
    "offline": _builtin("mindroom.ai.offline", "OfflineModel"),
}
