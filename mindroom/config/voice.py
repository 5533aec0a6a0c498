"""`voice:`: speech to text for voice messages (`stt`), and the text-to-speech service (`tts`) agents answer them
with.

`stt`'s keys and `tts`'s connection keys are MindRoom's speech-service keys (as `calls.profiles.*.tts` has
them); `tts.voice`, `tts.max_chars` and `voice.replies` are this daemon's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mindroom.config.strict import StrictModel

__all__ = ["DEFAULT_SPOKEN_CHARS", "SpeechToTextConfig", "TextToSpeechConfig", "VoiceConfig"]

DEFAULT_SPOKEN_CHARS = 600
_RESERVED_SPEECH_FIELDS = frozenset({"api_key", "base_url", "client", "model"})


class SpeechToTextConfig(StrictModel):
    """MindRoom's `voice.stt`: an OpenAI (or OpenAI-compatible) transcription service of its own."""

    provider: Literal["openai", "openai_compatible"] = "openai"
    model: str = "whisper-1"
    api_key: str | None = None
    """Unset: `OPENAI_API_KEY`."""
    host: str | None = None
    """The service's root or `/v1` URL (required for `openai_compatible`)."""
    extra_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra form fields sent with each request (`language`, `prompt`...)."""

    @field_validator("api_key", "host", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value

    @field_validator("extra_kwargs")
    @classmethod
    def _no_connection_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        # The connection has typed keys of its own; a second spelling here would contradict them.
        reserved = sorted(set(value) & _RESERVED_SPEECH_FIELDS)
        if reserved:
            msg = f"extra_kwargs must not set {', '.join(reserved)} (they are keys of their own here)"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _host_when_compatible(self) -> SpeechToTextConfig:
        if self.provider == "openai_compatible" and self.host is None:
            msg = "an openai_compatible service needs host"
            raise ValueError(msg)
        if self.host is not None and not self.host.startswith(("http://", "https://")):
            msg = "host must be an http(s) URL"
            raise ValueError(msg)
        return self

    @property
    def base_url(self) -> str | None:
        """The OpenAI client's `base_url` for this service (`<host>/v1`), or None for OpenAI's own."""
        if self.host is None:
            return None
        root = self.host.rstrip("/")
        return root if root.endswith("/v1") else f"{root}/v1"


class TextToSpeechConfig(SpeechToTextConfig):
    """An OpenAI (or OpenAI-compatible) `/v1/audio/speech` service, the voice it speaks with, and its length cap."""

    model: str = "gpt-4o-mini-tts"
    voice: str = "alloy"
    """The speaker's name, as the service knows it."""
    max_chars: int = Field(default=DEFAULT_SPOKEN_CHARS, ge=20, le=4096)
    """A longer answer is spoken up to the last sentence end within this many characters."""


class VoiceConfig(StrictModel):
    """Voice messages: heard through a transcription endpoint, and answered in voice through a speech one."""

    enabled: bool | None = None
    """`false`: voice messages are not transcribed (the agent says it cannot listen); unset or `true`: they are."""
    stt: SpeechToTextConfig | None = None
    """MindRoom's transcription service settings; when set, they are used instead of `model`."""
    model: str | None = None
    """The entry under `models:` whose endpoint and key are used (unset: the `default` model)."""
    transcription_id: str = "whisper-1"
    tts: TextToSpeechConfig | None = None
    """The text-to-speech service of voice replies (unset: agents never speak)."""
    replies: bool | list[str] = False
    """Answer a voice message with a voice message too: `true` for every agent and team, or the ones named.
    `!voice on|off` changes it for a room."""

    @model_validator(mode="after")
    def _replies_need_speech(self) -> VoiceConfig:
        if self.replies and self.tts is None:
            msg = "voice.replies needs voice.tts (the text-to-speech service that speaks them)"
            raise ValueError(msg)
        return self

    def unknown_responders(self, known: Sequence[str]) -> list[str]:
        """The names in `replies` that are no agent or team of `known`."""
        named = self.replies if isinstance(self.replies, list) else []
        listing = ", ".join(known) or "none"
        return [
            f"voice.replies: {name!r} is no agent or team (known: {listing})" for name in named if name not in known
        ]

    def replies_for(self, entity: str) -> bool:
        """Whether `entity` answers voice messages with voice too, as config.yaml says (a room may differ)."""
        return self.tts is not None and (
            self.replies is True or (isinstance(self.replies, list) and entity in self.replies)
        )
