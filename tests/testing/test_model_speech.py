"""The scripted server's `/audio/speech` with OpenAI's own client: real Ogg/Opus audio, its requests, failures."""

from __future__ import annotations

import io

import av
import openai
import pytest

from mindroom.testing.model_server import ScriptedModelServer

pytest_plugins = ("mindroom.testing.model_server",)


@pytest.fixture
def client(model_server: ScriptedModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=model_server.base_url, api_key="k-speech", max_retries=0, timeout=10)


def test_model_speech_answers_a_playable_ogg_opus_file_of_the_set_length(
    model_server: ScriptedModelServer, client: openai.OpenAI
):
    model_server.speech.speak_for(0.8)

    audio = client.audio.speech.create(model="tts-1", voice="alloy", input="hello", response_format="opus").content

    with av.open(io.BytesIO(audio)) as container:
        assert container.format.name == "ogg" and container.streams.audio[0].codec_context.name == "opus"
        samples = sum(frame.samples for frame in container.decode(audio=0))
    assert abs(samples / 48_000 - 0.8) < 0.02
    (request,) = model_server.speech.requests
    assert (request.model, request.voice, request.input, request.api_key) == ("tts-1", "alloy", "hello", "k-speech")


def test_model_speech_fails_as_scripted_until_told_to_speak_again(
    model_server: ScriptedModelServer, client: openai.OpenAI
):
    model_server.speech.fail(503, "speech down")

    with pytest.raises(openai.APIStatusError) as failed:
        client.audio.speech.create(model="tts-1", voice="alloy", input="one")
    model_server.speech.speak_for(0.2)
    again = client.audio.speech.create(model="tts-1", voice="alloy", input="two").content

    assert failed.value.status_code == 503 and "speech down" in str(failed.value)
    assert again.startswith(b"OggS")
    assert [r.input for r in model_server.speech.requests] == ["one", "two"]


def test_model_speech_reset_forgets_requests_and_failure(model_server: ScriptedModelServer, client: openai.OpenAI):
    model_server.speech.fail()
    with pytest.raises(openai.APIStatusError):
        client.audio.speech.create(model="tts-1", voice="alloy", input="x")

    model_server.reset()

    assert model_server.speech.requests == []
    assert client.audio.speech.create(model="tts-1", voice="alloy", input="y").content.startswith(b"OggS")
