"""Turn a `ModelConfig` into an agno model; a provider's SDK is imported when a model first needs it.

The `openai` SDK alone takes about half a second to import, so it is kept off the daemon's start
(`mindroom.ai.preload_in_background` loads it once the daemon is ready, before the first message needs it);
the other providers' SDKs load only when an agent uses them. `mindroom.ai.model_recipes` says which class
and arguments each provider gets.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from agno.models.base import Model

from mindroom.ai.errors import ModelConfigError
from mindroom.ai.failures import CALL_POLICY_ATTRIBUTE, reporting_class
from mindroom.ai.model_recipes import PLACEHOLDER_API_KEY, ModelRecipe, model_recipe
from mindroom.ai.resilience import CallPolicy
from mindroom.ai.tool_payload import verbatim_class
from mindroom.config.main import ModelConfig
from mindroom.config.project_extras import install_extra_command
from mindroom.config.providers import PROVIDERS, missing_packages
from mindroom.logging_config import get_logger

__all__ = ["PLACEHOLDER_API_KEY", "build_model", "close_model", "model_class", "model_env_fingerprint"]

logger = get_logger(__name__)


def model_env_fingerprint(model: ModelConfig, env: Mapping[str, str]) -> tuple[str | None, ...]:
    """The environment values `build_model` reads for this model (a model must be rebuilt when they change)."""
    return tuple(env.get(key) for key in PROVIDERS[model.provider].variables)


def model_class(recipe: ModelRecipe, provider: str, label: str) -> type[Model]:
    """The agno class a recipe names; `ModelConfigError` naming the extra to install when its SDK is missing."""
    try:
        module = importlib.import_module(recipe.module)
    except ImportError as error:
        missing = ", ".join(missing_packages(provider)) or str(error)
        extra = PROVIDERS[provider].extra
        how = install_extra_command(extra) if extra else "install this project again"
        raise ModelConfigError(label, f"provider {provider!r} needs the {missing} package: {how}") from error
    found = getattr(module, recipe.class_name)
    if not (isinstance(found, type) and issubclass(found, Model)):
        raise ModelConfigError(label, f"{recipe.module}.{recipe.class_name} is not an agno model")
    return found


def build_model(model: ModelConfig, *, env: Mapping[str, str], name: str | None = None) -> Model:
    """Build the agno model for a config entry; `ModelConfigError` names the model and what is missing."""
    label = name or f"{model.provider}:{model.id}"
    recipe = model_recipe(model, env, label)
    cls = reporting_class(verbatim_class(model_class(recipe, model.provider, label)))
    try:
        built = cls(**recipe.kwargs)
    except TypeError as error:
        raise ModelConfigError(label, f"unsupported option for {cls.__name__}: {error}") from None
    except ValueError as error:  # agno checks some options when the model is made (e.g. thinking)
        raise ModelConfigError(label, f"invalid option for {cls.__name__}: {error}") from None
    setattr(built, CALL_POLICY_ATTRIBUTE, CallPolicy(recipe.max_retries, recipe.stream_idle_timeout_s))
    return built


async def close_model(model: Model) -> None:
    """Close the model's cached async HTTP client, if it opened one."""
    client: Any = getattr(model, "async_client", None)
    closer = getattr(client, "close", None) or getattr(client, "aclose", None)
    if not callable(closer):
        return
    try:
        result = closer()
        if inspect.isawaitable(result):
            await result
    except Exception as error:
        logger.warning("closing the model client failed", model=model.id, error=str(error))
