"""`ModelConfig`: one entry of `models:` (MindRoom's keys: provider, id, host, api_key, extra_kwargs, ...)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mindroom.config.providers import PROVIDER_ALIASES, PROVIDERS, provider_route
from mindroom.config.strict import StrictModel

__all__ = ["ModelConfig", "ModelPricing"]


class ModelPricing(StrictModel):
    """A model's prices in USD per million tokens (MindRoom's `pricing`): each turn's recorded cost, and budgets."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Unset: the input price."""
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Unset: the input price."""


class ModelConfig(StrictModel):
    """A language model: provider, model id, and provider options (keys as MindRoom's `models:` entries)."""

    provider: str = "openai"
    """One of `PROVIDERS` (or an alias such as `gemini`); stored under its canonical name."""
    id: str
    display_name: str | None = None
    """The name `!model` lists show for it."""
    icon: str | None = None
    """An image for clients that show one (a config-relative path or an `mxc://` URI)."""
    pricing: ModelPricing | None = None
    host: str | None = None
    api_key: str | None = None
    temperature: float | None = None
    extra_kwargs: dict[str, Any] = Field(default_factory=dict)
    api: Literal["responses", "chat_completions"] | None = None
    """OpenAI only: which API answers; unset picks Chat Completions, or Responses for models that need it."""
    context_window: int | None = Field(default=None, ge=1)
    """The model's context size in tokens: stored history is kept to half of it."""
    stream_idle_timeout_seconds: float | None = Field(default=None, ge=0)
    """How long a streamed answer may stay silent before it is cut (and retried once if nothing was shown);
    unset: 300 s for hosted providers on their own endpoint, no limit for local servers and custom endpoints;
    0: no limit."""
    vision: bool | None = None
    """Whether the model takes images; unset: guessed from provider and model id."""

    @field_validator("provider", mode="before")
    @classmethod
    def _known_provider(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        route = provider_route(value)
        if route not in PROVIDERS:
            msg = f"unknown provider {value!r} (use one of: {', '.join(sorted(PROVIDERS))}; aliases: "
            msg += ", ".join(f"{alias} = {name}" for alias, name in sorted(PROVIDER_ALIASES.items())) + ")"
            raise ValueError(msg)
        return route

    @field_validator("display_name", "icon", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value

    @field_validator("icon")
    @classmethod
    def _icon(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "://" in value:
            server, _, media = value.partition("://")[2].partition("/")
            if not value.lower().startswith("mxc://") or not server or not media or "/" in media:
                msg = "a model icon is a path relative to the config file or an mxc://server/media URI"
                raise ValueError(msg)
            return "mxc" + value[3:]
        if value.startswith(("/", "\\")) or (len(value) > 1 and value[1] == ":"):
            msg = "a model icon's path must be relative to the config file"
            raise ValueError(msg)
        return value

    @field_validator("api_key", mode="before")
    @classmethod
    def _blank_key_is_unset(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _api_is_openai_only(self) -> ModelConfig:
        if self.api is not None and self.provider != "openai":
            msg = f"`api` is only supported for provider openai, not {self.provider!r}"
            raise ValueError(msg)
        return self
