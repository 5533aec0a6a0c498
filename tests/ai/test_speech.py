"""Text to speech over HTTP against the scripted server, and what part of an answer is spoken."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from mindroom import ai
from mindroom.config.voice import TextToSpeechConfig
from mindroom.logging_config import redact_value
from mindroom.testing.model_server import ScriptedModelServer


def _service(model_server: ScriptedModelServer, **extra: object) -> TextToSpeechConfig:
    return TextToSpeechConfig.model_validate(
        {"provider": "openai_compatible", "host": model_server.url, "model": "kokoro", "voice": "af_sky", **extra}
    )


@pytest.mark.asyncio
async def test_speech_asks_for_opus_with_the_services_model_voice_and_fields(model_server: ScriptedModelServer):
    service = _service(model_server, extra_kwargs={"speed": 1.25})

    audio = await ai.synthesize(service, "Hello there.", {"OPENAI_API_KEY": "sk-secret"})

    assert audio.startswith(b"OggS")
    (request,) = model_server.speech.requests
    assert (request.model, request.voice, request.input, request.response_format) == (
        "kokoro", "af_sky", "Hello there.", "opus"
    )  # fmt: skip
    assert request.extra == {"speed": 1.25}
    assert request.api_key == ai.PLACEHOLDER_API_KEY  # never the OpenAI key on the operator's own host


@pytest.mark.asyncio
async def test_speech_failure_is_a_speech_error(model_server: ScriptedModelServer):
    model_server.speech.fail(500, "no voice today")

    with pytest.raises(ai.SpeechError, match="no voice today"):
        await ai.synthesize(_service(model_server), "Hello.", {})


@pytest.mark.asyncio
async def test_speech_of_openai_itself_without_any_key_is_refused_before_a_request():
    with pytest.raises(ai.SpeechError, match="OPENAI_API_KEY"):
        await ai.synthesize(TextToSpeechConfig(), "Hello.", {})


@pytest.mark.parametrize(
    ("text", "limit", "spoken"),
    [
        pytest.param("Short answer.", 100, "Short answer.", id="fits"),
        pytest.param("**Bold** and `code` with a [link](http://x).", 100, "Bold and code with a link.", id="markup"),
        pytest.param("One two three. Four five six seven.", 30, "One two three.", id="cut-at-sentence"),
        pytest.param("One. Two three four five six seven.", 30, "One. Two three four five six…", id="end-too-early"),
        pytest.param("First one here. Second one! Third goes on", 30, "First one here. Second one!", id="last"),
        pytest.param("no sentence end in reach at all here", 20, "no sentence end in…", id="cut-at-space"),
        pytest.param("Hi. " + "x" * 50, 30, "Hi. " + "x" * 25 + "…", id="one-long-word"),
        pytest.param("Look at version 2.5 now", 100, "Look at version 2.5 now", id="decimal-point"),
        pytest.param("```\nprint(1)\n```\nDone.", 100, "Done.", id="code-block-not-read"),
    ],
)
def test_speech_spoken_text(text: str, limit: int, spoken: str):
    assert ai.spoken_text(text, limit) == spoken


@pytest.mark.asyncio
async def test_speech_key_never_reaches_the_log_when_the_service_echoes_it(model_server: ScriptedModelServer):
    key = "plain-speech-pass-4242"  # no token shape: only its registration keeps it out
    model_server.speech.fail(401, f"Incorrect API key provided: {key}")

    with capture_logs() as logs, pytest.raises(ai.SpeechError):
        await ai.synthesize(_service(model_server, api_key=key), "Hello.", {})

    rendered = [redact_value(entry) for entry in logs]
    assert rendered and key not in str(rendered)
