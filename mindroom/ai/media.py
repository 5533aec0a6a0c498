"""Media for the model: images it can look at, and voice turned into text through a transcription endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.ai.model_recipes import PLACEHOLDER_API_KEY
from mindroom.config.main import ModelConfig
from mindroom.config.sections import SpeechToTextConfig
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger

__all__ = ["ImageInput", "TranscriptionError", "speech_service_model", "supports_vision", "transcribe"]

logger = get_logger(__name__)

_TRANSCRIPTION_TIMEOUT_S = 120.0
_VISION_MODEL_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5", "o3", "o4", "chatgpt-4o")


@dataclass(frozen=True, slots=True)
class ImageInput:
    """One image for the model: its bytes and type."""

    data: bytes
    mimetype: str | None


class TranscriptionError(MindroomError):
    """Speech could not be turned into text (the endpoint failed, or answered nothing)."""


def speech_service_model(service: SpeechToTextConfig) -> ModelConfig:
    """The OpenAI-compatible connection of a speech service (`voice.stt`) as a model entry.

    A service on a host of the operator's own never receives `OPENAI_API_KEY`: without a key of its own it
    gets a placeholder, as keyless local servers expect.
    """
    extra = {"base_url": service.base_url} if service.base_url is not None else {}
    api_key = service.api_key or (PLACEHOLDER_API_KEY if service.base_url is not None else None)
    return ModelConfig(provider="openai", id=service.model, api_key=api_key, extra_kwargs=extra)


def supports_vision(model: ModelConfig) -> bool:
    """Whether images go to this model as images: its `vision` setting, else what its provider and id suggest."""
    if model.vision is not None:
        return model.vision
    if model.provider == "anthropic":
        return True
    custom_endpoint = model.host or model.extra_kwargs.get("base_url")
    return model.provider == "openai" and not custom_endpoint and model.id.startswith(_VISION_MODEL_PREFIXES)


async def transcribe(
    model: ModelConfig,
    transcription_id: str,
    audio: bytes,
    filename: str,
    mimetype: str | None,
    env: Mapping[str, str],
    fields: Mapping[str, Any] | None = None,
) -> str | None:
    """The text of a voice message from `model`'s OpenAI-compatible endpoint (with extra form `fields`); None when
    it has none.

    Raises `TranscriptionError` when the endpoint fails.
    """
    if model.provider != "openai":
        return None
    options = dict(model.extra_kwargs)
    base_url = options.get("base_url") or model.host
    api_key = model.api_key or options.get("api_key") or env.get("OPENAI_API_KEY")
    if not api_key and base_url is None:
        return None
    import openai  # kept off the daemon's start (see `mindroom.ai.models`)

    client = openai.AsyncOpenAI(
        base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, timeout=_TRANSCRIPTION_TIMEOUT_S, max_retries=1
    )
    try:
        result = await client.audio.transcriptions.create(
            model=transcription_id,
            file=(filename, audio, mimetype or "application/octet-stream"),
            extra_body=dict(fields or {}),
        )
    except openai.OpenAIError as exc:
        logger.warning("transcription failed", model=model.id, error=str(exc))
        raise TranscriptionError(str(exc)) from None
    finally:
        await client.close()
    text = getattr(result, "text", None)
    if not isinstance(text, str):
        raise TranscriptionError("the transcription endpoint answered without text")
    return text.strip()
