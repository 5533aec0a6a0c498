"""Model providers: their names (with aliases), the environment variables they read, the packages they need,
and which one the environment offers.

A `provider:` value is matched case-insensitively with `-` read as `_`, and aliases name the same provider
(`gemini` is `google`). For `mindroom config init` and `mindroom run`, the first variable of
`PROVIDER_ENV_VARS` that is set picks the provider (when its package is installed); with none, agents use
the built-in offline model. Nothing here imports a provider's package: `importlib.util.find_spec` says
whether it is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PROVIDERS",
    "PROVIDER_ALIASES",
    "PROVIDER_ENV_VARS",
    "Provider",
    "ProviderChoice",
    "detect_provider",
    "missing_packages",
    "normalized_provider_name",
    "provider_env_defaults",
    "provider_route",
]


@dataclass(frozen=True, slots=True)
class Provider:
    """One model provider: its name, where its key and endpoint come from, and the packages its model needs."""

    name: str
    key_env: str | None = None
    """The variable holding the provider's shared key (a model's `api_key` wins over it)."""
    endpoint_env: str | None = None
    """The variable naming the provider's endpoint when the model sets none."""
    env_vars: tuple[str, ...] = ()
    """Every other variable its model reads."""
    packages: tuple[str, ...] = ()
    """Modules its agno model imports beyond the core dependencies."""
    extra: str | None = None
    """The install extra that brings `packages` (`config.project_extras.install_extra_command` names it)."""
    local: bool = False
    """A server on the user's own machine: it may stay silent for minutes while it loads a model."""

    @property
    def variables(self) -> tuple[str, ...]:
        """Every environment variable a model of this provider reads."""
        return tuple(var for var in (self.key_env, self.endpoint_env, *self.env_vars) if var)


PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (
        Provider("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        Provider("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", packages=("anthropic",), extra="anthropic"),
        Provider(
            "azure",
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_ENDPOINT",
            ("AZURE_OPENAI_API_VERSION", "AZURE_OPENAI_DEPLOYMENT"),
        ),
        Provider(
            "bedrock_claude",
            env_vars=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"),
            packages=("anthropic", "boto3"),
            extra="bedrock",
        ),
        # agno's Cerebras package imports the Cerebras SDK even for its OpenAI-compatible class
        Provider(
            "cerebras", "CEREBRAS_API_KEY", "CEREBRAS_BASE_URL", packages=("cerebras.cloud.sdk",), extra="cerebras"
        ),
        Provider("codex", env_vars=("CODEX_HOME",)),
        Provider("deepseek", "DEEPSEEK_API_KEY"),
        Provider("google", "GOOGLE_API_KEY", packages=("google.genai",), extra="google"),
        Provider("groq", "GROQ_API_KEY", "GROQ_BASE_URL", packages=("groq",), extra="groq"),
        Provider("kimi", env_vars=("KIMI_CODE_HOME",)),
        Provider("llama_cpp", local=True),
        Provider(
            "ollama",
            endpoint_env="OLLAMA_HOST",
            env_vars=("OLLAMA_API_KEY",),
            packages=("ollama",),
            extra="ollama",
            local=True,
        ),
        Provider("openrouter", "OPENROUTER_API_KEY"),
        Provider("synthetic", local=True),
        Provider(
            "vertexai_claude",
            endpoint_env="ANTHROPIC_VERTEX_BASE_URL",
            env_vars=("ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION"),
            packages=("anthropic", "google.auth"),
            extra="vertexai",
        ),
        Provider("zai", "ZAI_API_KEY"),
        Provider("offline", local=True),
    )
}
"""Every provider a model may name, by its canonical name."""

PROVIDER_ALIASES = {"gemini": "google", "openai_codex": "codex", "kimi_code": "kimi"}
"""Other names for a provider (after normalising the spelling)."""


def normalized_provider_name(provider: str) -> str:
    """A `provider:` value trimmed, lowercased, with `-` spelled `_`."""
    return provider.strip().lower().replace("-", "_")


def provider_route(provider: str) -> str:
    """The canonical name a `provider:` value selects (its normalised spelling, aliases resolved)."""
    name = normalized_provider_name(provider)
    return PROVIDER_ALIASES.get(name, name)


def _installed(package: str | None) -> bool:
    if package is None:
        return True
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


_DISTRIBUTIONS = {
    "google.genai": "google-genai",
    "google.auth": "google-auth",
    "cerebras.cloud.sdk": "cerebras-cloud-sdk",
}
"""The name to install a module by, where it differs from the module's."""


def missing_packages(provider: str) -> tuple[str, ...]:
    """The packages (as `pip` names them) that `provider` needs and are not installed; none for an unknown one."""
    known = PROVIDERS.get(provider_route(provider))
    modules = known.packages if known else ()
    return tuple(_DISTRIBUTIONS.get(module, module) for module in modules if not _installed(module))


_DETECTED = (
    # env var, provider, default model id (the provider's package is checked too)
    ("OPENAI_API_KEY", "openai", "gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic", "claude-3-5-haiku-latest"),
    ("GOOGLE_API_KEY", "google", "gemini-2.5-flash"),
    ("OPENROUTER_API_KEY", "openrouter", "openai/gpt-4o-mini"),
    ("DEEPSEEK_API_KEY", "deepseek", "deepseek-chat"),
    ("GROQ_API_KEY", "groq", "llama-3.3-70b-versatile"),
    ("CEREBRAS_API_KEY", "cerebras", "llama-3.3-70b"),
    ("ZAI_API_KEY", "zai", "glm-4.6"),
    ("AZURE_OPENAI_API_KEY", "azure", "gpt-4o-mini"),
    ("OLLAMA_HOST", "ollama", "llama3.2"),
)

PROVIDER_ENV_VARS = tuple(var for var, _, _ in _DETECTED)
"""The variables that switch agents from the offline model to a real one, in order of preference."""


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """The model provider the environment offers; `skipped` names keys set whose package is missing."""

    provider: str
    model_id: str
    env_var: str | None
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def is_offline(self) -> bool:
        """True when agents fall back to the offline model."""
        return self.provider == "offline"


def detect_provider(env: Mapping[str, str]) -> ProviderChoice:
    """The first provider whose variable is set and whose packages are installed, else the offline model."""
    skipped: list[tuple[str, str]] = []
    for var, provider, model_id in _DETECTED:
        if not env.get(var):
            continue
        missing = [package for package in PROVIDERS[provider].packages if not _installed(package)]
        if missing:
            skipped.append((var, _DISTRIBUTIONS.get(missing[0], missing[0])))
            continue
        return ProviderChoice(provider, model_id, var, tuple(skipped))
    return ProviderChoice("offline", "offline", None, tuple(skipped))


def provider_env_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """`MINDROOM_MODEL_PROVIDER`/`_ID` for configs that read them, unless the environment sets them already."""
    choice = detect_provider(env)
    if choice.is_offline or env.get("MINDROOM_MODEL_PROVIDER"):
        return {}
    defaults = {"MINDROOM_MODEL_PROVIDER": choice.provider}
    if not env.get("MINDROOM_MODEL_ID"):
        defaults["MINDROOM_MODEL_ID"] = choice.model_id
    return defaults
