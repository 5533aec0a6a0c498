"""Turn a `ModelConfig` into an agno model; every provider SDK is imported when a model first needs it.

The `openai` SDK alone takes about half a second to import, so it is kept off the daemon's start
(`mindroom.ai.preload_in_background` loads it once the daemon is ready, before the first message needs it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from agno.models.base import Model

from mindroom.ai.errors import ModelConfigError
from mindroom.ai.failures import reporting_class
from mindroom.ai.offline import OfflineModel
from mindroom.config.main import ModelConfig
from mindroom.logging_config import get_logger

__all__ = ["PLACEHOLDER_API_KEY", "build_model", "close_model", "model_env_fingerprint"]

logger = get_logger(__name__)

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to OpenAI-compatible servers at a custom `base_url` when no key is configured (local servers ignore it)."""

_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "ollama": ("OLLAMA_HOST", "OLLAMA_API_KEY"),
    "offline": (),
}


def model_env_fingerprint(model: ModelConfig, env: Mapping[str, str]) -> tuple[str | None, ...]:
    """The environment values `build_model` reads for this model (a model must be rebuilt when they change)."""
    return tuple(env.get(key) for key in _ENV_KEYS[model.provider])


def build_model(model: ModelConfig, *, env: Mapping[str, str], name: str | None = None) -> Model:
    """Build the agno model for a config entry; `ModelConfigError` names the model and what is missing."""
    label = name or f"{model.provider}:{model.id}"
    return _BUILDERS[model.provider](model, env, label)


async def close_model(model: Model) -> None:
    """Close the model's cached async HTTP client, if it opened one."""
    client = getattr(model, "async_client", None)
    closer = getattr(client, "close", None) or getattr(client, "aclose", None)
    if not callable(closer):
        return
    try:
        result = closer()
        if inspect.isawaitable(result):
            await result
    except Exception as error:
        logger.warning("closing the model client failed", model=model.id, error=str(error))


def _openai(model: ModelConfig, env: Mapping[str, str], label: str) -> Model:
    options = dict(model.extra_kwargs)
    base_url = options.pop("base_url", None) or model.host
    option_key = options.pop("api_key", None)
    api_key = model.api_key or option_key or env.get("OPENAI_API_KEY")
    from agno.models.openai import OpenAIChat
    from agno.models.openai.like import OpenAILike

    model_class: type[Model]
    if base_url is None:
        if not api_key:
            raise ModelConfigError(label, "needs an API key: set `api_key` or the OPENAI_API_KEY environment variable")
        model_class = OpenAIChat
    else:
        options["base_url"] = base_url
        api_key = api_key or PLACEHOLDER_API_KEY
        model_class = OpenAILike
    if model.temperature is not None:
        options.setdefault("temperature", model.temperature)
    return _construct(reporting_class(model_class), label, id=model.id, api_key=api_key, **options)


def _anthropic(model: ModelConfig, env: Mapping[str, str], label: str) -> Model:
    try:
        from agno.models.anthropic import Claude
    except ImportError as error:
        msg = "provider 'anthropic' needs the `anthropic` package (pip install anthropic)"
        raise ModelConfigError(label, msg) from error
    options = dict(model.extra_kwargs)
    option_key = options.pop("api_key", None)
    api_key = model.api_key or option_key or env.get("ANTHROPIC_API_KEY")
    if not api_key:
        raise ModelConfigError(label, "needs an API key: set `api_key` or the ANTHROPIC_API_KEY environment variable")
    if model.host:
        options["client_params"] = {"base_url": model.host, **(options.get("client_params") or {})}
    if model.temperature is not None:
        options.setdefault("temperature", model.temperature)
    return _construct(reporting_class(Claude), label, id=model.id, api_key=api_key, **options)


def _ollama(model: ModelConfig, env: Mapping[str, str], label: str) -> Model:
    try:
        from agno.models.ollama import Ollama
    except ImportError as error:
        raise ModelConfigError(label, "provider 'ollama' needs the `ollama` package (pip install ollama)") from error
    options = dict(model.extra_kwargs)
    options.setdefault("host", model.host or env.get("OLLAMA_HOST"))
    options.setdefault("api_key", model.api_key or env.get("OLLAMA_API_KEY"))
    if model.temperature is not None:
        options["options"] = {"temperature": model.temperature, **(options.get("options") or {})}
    return _construct(reporting_class(Ollama), label, id=model.id, **options)


def _offline(model: ModelConfig, env: Mapping[str, str], label: str) -> Model:
    return _construct(OfflineModel, label, id=model.id, **model.extra_kwargs)


def _construct(model_class: type[Model], label: str, **kwargs: Any) -> Model:
    try:
        return model_class(**kwargs)
    except TypeError as error:
        raise ModelConfigError(label, f"unsupported option for {model_class.__name__}: {error}") from None


_BUILDERS: dict[str, Callable[[ModelConfig, Mapping[str, str], str], Model]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "offline": _offline,
}
