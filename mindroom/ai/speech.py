"""Text to speech: an answer spoken through an OpenAI-compatible `/v1/audio/speech` endpoint, as Ogg/Opus audio.

Only the first part of a long answer is spoken (`spoken_text`): up to the last sentence end within the
service's `max_chars`, so a voice reply stays a short message and never stops mid-sentence when a sentence
end is in reach.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mindroom.ai.model_recipes import PLACEHOLDER_API_KEY
from mindroom.config.voice import TextToSpeechConfig
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger, register_secret_values

__all__ = ["SpeechError", "spoken_text", "synthesize"]

logger = get_logger(__name__)

_SPEECH_TIMEOUT_S = 60.0
_MARKUP = re.compile(r"```.*?```|`|\*\*|__|^#+\s*|^\s*[-*]\s+|!?\[([^\]]*)\]\([^)]*\)", re.DOTALL | re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")


class SpeechError(MindroomError):
    """Text could not be turned into speech (no key, the endpoint failed, or it answered no audio)."""


def _unmarked(match: re.Match[str]) -> str:
    return match.group(1) or ""  # a link is read as its text; code blocks and markers are not read out


def spoken_text(text: str, max_chars: int) -> str:
    """What is read out of an answer: Markdown markers dropped, then at most `max_chars` characters, cut at the
    last sentence end past its first third (else the last space there, else mid-word), with `…` when cut
    elsewhere than at a sentence end."""
    plain = " ".join(_MARKUP.sub(_unmarked, text).split())
    if len(plain) <= max_chars:
        return plain
    head = plain[:max_chars]
    ends = [match.end() for match in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= max_chars // 3:
        return head[: ends[-1]]
    space = head.rfind(" ")
    return (head[:space] if space >= max_chars // 3 else head[: max_chars - 1]).rstrip() + "…"


async def synthesize(service: TextToSpeechConfig, text: str, env: Mapping[str, str]) -> bytes:
    """`text` spoken by `service`, as Ogg/Opus bytes; `SpeechError` when it cannot be."""
    base_url = service.base_url
    # A service on the operator's own host never receives the OpenAI key; a keyless one gets a placeholder.
    api_key = service.api_key or (PLACEHOLDER_API_KEY if base_url is not None else env.get("OPENAI_API_KEY"))
    if not api_key:
        raise SpeechError("no key for the speech service (voice.tts.api_key or OPENAI_API_KEY)")
    if api_key != PLACEHOLDER_API_KEY:
        register_secret_values([api_key])  # an error the service echoes it in stays out of the log
    import openai  # kept off the daemon's start (see `mindroom.ai.models`)

    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=_SPEECH_TIMEOUT_S, max_retries=0)
    try:
        response = await client.audio.speech.create(
            model=service.model,
            voice=service.voice,
            input=text,
            response_format="opus",
            extra_body=dict(service.extra_kwargs),
        )
        audio = response.content
    except openai.OpenAIError as exc:
        logger.warning("speech failed", model=service.model, error=str(exc))
        raise SpeechError(str(exc)) from None
    finally:
        await client.close()
    if not audio:
        raise SpeechError("the speech endpoint answered without audio")
    return audio
