"""Which model provider the environment offers.

The first of `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OLLAMA_HOST` that is set picks the provider
(when its Python package is installed); with none, agents use the built-in offline model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PROVIDER_ENV_VARS", "ProviderChoice", "detect_provider", "provider_env_defaults"]

PROVIDER_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST")
"""The variables that switch agents from the offline model to a real one, in order of preference."""

_PROVIDERS = (
    # env var, provider, default model id, Python package the agno model needs (None: a core dependency)
    ("OPENAI_API_KEY", "openai", "gpt-4o-mini", None),
    ("ANTHROPIC_API_KEY", "anthropic", "claude-3-5-haiku-latest", "anthropic"),
    ("OLLAMA_HOST", "ollama", "llama3.2", "ollama"),
)


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


def _installed(package: str | None) -> bool:
    return package is None or importlib.util.find_spec(package) is not None


def detect_provider(env: Mapping[str, str]) -> ProviderChoice:
    """The first provider whose variable is set and whose package is installed, else the offline model."""
    skipped: list[tuple[str, str]] = []
    for var, provider, model_id, package in _PROVIDERS:
        if not env.get(var):
            continue
        if not _installed(package):
            skipped.append((var, str(package)))
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
