"""Speech to text over HTTP against the scripted server: MindRoom's `voice.stt` connection and form fields."""

from __future__ import annotations

import pytest

from mindroom import ai
from mindroom.config.sections import SpeechToTextConfig
from mindroom.testing.model_server import ScriptedModelServer

AUDIO = b"OggS" + bytes(range(64))
SECRET = "sk-the-operators-openai-key"


@pytest.mark.asyncio
async def test_media_stt_extra_kwargs_reach_the_service_as_form_fields(model_server: ScriptedModelServer):
    stt = SpeechToTextConfig(
        provider="openai_compatible", host=model_server.url, model="whisper-x", extra_kwargs={"language": "de"}
    )
    model_server.set_transcript("guten Tag")

    text = await ai.transcribe(
        ai.speech_service_model(stt), stt.model, AUDIO, "v.ogg", "audio/ogg", {}, stt.extra_kwargs
    )

    assert text == "guten Tag"
    (received,) = model_server.transcriptions
    assert (received.model, received.audio, dict(received.fields)) == ("whisper-x", AUDIO, {"language": "de"})


@pytest.mark.asyncio
async def test_media_stt_on_an_operators_host_never_receives_the_openai_key(model_server: ScriptedModelServer):
    keyless = SpeechToTextConfig(provider="openai_compatible", host=model_server.base_url, model="w")
    keyed = SpeechToTextConfig(provider="openai_compatible", host=model_server.base_url, model="w", api_key="own")
    env = {"OPENAI_API_KEY": SECRET}

    await ai.transcribe(ai.speech_service_model(keyless), "w", AUDIO, "v.ogg", None, env)
    await ai.transcribe(ai.speech_service_model(keyed), "w", AUDIO, "v.ogg", None, env)

    assert [t.api_key for t in model_server.transcriptions] == [ai.PLACEHOLDER_API_KEY, "own"]


def test_media_stt_of_openai_itself_takes_the_environment_key():
    model = ai.speech_service_model(SpeechToTextConfig(model="whisper-1"))

    assert model.api_key is None and "base_url" not in model.extra_kwargs  # `transcribe` reads OPENAI_API_KEY then
