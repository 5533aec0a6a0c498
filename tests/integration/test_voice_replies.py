"""Voice replies on a real homeserver, in an encrypted room: a voice message is transcribed and answered in
text and in voice (a real Ogg/Opus recording, encrypted, flagged as voice, with its length); a text message
costs no speech; a failed speech call leaves the text answer alone; `!voice on` turns them on for a room; the
`matrix_voice_message` tool speaks into the agent's thread."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any
from urllib.parse import quote

import av
import nio
import pytest
from nio.crypto.attachments import decrypt_attachment, encrypt_attachment

from mindroom.constants import VOICE_PREFIX
from mindroom.testing.model_server import Text, ToolCall, last_user_message
from mindroom.testing.model_speech import ogg_opus_tone
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ANSWER = "Your table for two is booked at eight. I will remind you an hour before."


async def _world(e2e: E2E, voice: dict[str, Any], tools: tuple[str, ...] = ()) -> tuple[HumanClient, str, str]:
    human = await e2e.human(encrypted=True)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": list(tools)}},
        rooms={room: {"name": "Vault", "encrypted": True}},
        voice=voice,
        administrators=[human.user_id],
    )
    e2e.model_server.set_default(Text(ANSWER))
    e2e.model_server.set_transcript("book a table for two at eight")
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    await human.wait_for_member(room_id, agent_id)
    return human, room_id, agent_id


def _tts(e2e: E2E, **extra: Any) -> dict[str, Any]:
    return {"provider": "openai_compatible", "host": e2e.model_server.url, "model": "tts-x", "voice": "nova", **extra}


async def _send_voice(human: HumanClient, room_id: str, audio: bytes) -> str:
    """A voice note as Element sends one into an encrypted room: the recording encrypted, then the event."""
    ciphertext, keys = encrypt_attachment(audio)
    uploaded, _ = await human.client.upload(
        io.BytesIO(ciphertext), content_type="application/octet-stream", filename="note.ogg", filesize=len(ciphertext)
    )
    assert isinstance(uploaded, nio.UploadResponse), uploaded
    content = {
        "msgtype": "m.audio",
        "body": "Voice message",
        "info": {"mimetype": "audio/ogg", "size": len(audio)},
        "file": {"url": uploaded.content_uri, "mimetype": "audio/ogg", **keys},
        "org.matrix.msc3245.voice": {},
    }
    return await human._room_send(room_id, "m.room.message", content)


async def _download(human: HumanClient, url: str) -> bytes:
    server, _, media_id = url.removeprefix("mxc://").partition("/")
    path = f"/_matrix/client/v1/media/download/{quote(server)}/{quote(media_id)}"
    response = await human.client.send("GET", path, None, {"Authorization": f"Bearer {human.client.access_token}"})
    assert response.status == 200
    return await response.read()


def _kind(root: str, agent_id: str, msgtype: str):
    return lambda e: thread_replies(root, agent_id)(e) and e["content"].get("msgtype") == msgtype


def _decoded_ms(data: bytes) -> int:
    """The recording's length as FFmpeg decodes it (samples counted, 48 kHz)."""
    with av.open(io.BytesIO(data)) as container:
        samples = sum(frame.samples for frame in container.decode(audio=0))
    return samples * 1000 // 48_000


async def test_voice_reply_a_voice_message_is_answered_in_text_and_in_encrypted_voice(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e), "replies": True})
    e2e.model_server.speech.speak_for(1.5)

    root = await _send_voice(human, room_id, ogg_opus_tone(0.5))
    text = await human.wait_for(_kind(root, agent_id, "m.text"))
    voice = await human.wait_for(_kind(root, agent_id, "m.audio"))

    assert last_user_message(e2e.model_server.requests[-1]).startswith(VOICE_PREFIX + "book a table")
    assert text["content"]["body"] == ANSWER
    (spoken,) = e2e.model_server.speech.requests
    assert (spoken.model, spoken.voice, spoken.input, spoken.response_format) == ("tts-x", "nova", ANSWER, "opus")
    content = voice["content"]
    assert voice.get("decrypted") is True and "url" not in content
    assert content["org.matrix.msc3245.voice"] == {} and content["info"]["mimetype"] == "audio/ogg"
    assert content["m.relates_to"]["rel_type"] == "m.thread" and content["m.relates_to"]["event_id"] == root
    file_info = content["file"]
    plain = decrypt_attachment(
        await _download(human, file_info["url"]), file_info["key"]["k"], file_info["hashes"]["sha256"], file_info["iv"]
    )
    assert plain.startswith(b"OggS") and content["info"]["size"] == len(plain)
    duration = content["org.matrix.msc1767.audio"]["duration"]
    assert duration == content["info"]["duration"] and abs(duration - _decoded_ms(plain)) <= 20
    assert 1480 <= duration <= 1520
    waveform = content["org.matrix.msc1767.audio"]["waveform"]
    assert waveform and all(isinstance(v, int) and 0 <= v <= 1024 for v in waveform) and max(waveform) == 1024


async def test_voice_reply_a_text_message_costs_no_speech(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e), "replies": True})

    root = await human.send(room_id, "book a table for two")
    await human.wait_for(_kind(root, agent_id, "m.text"))
    await e2e.idle()

    assert e2e.model_server.speech.requests == []
    assert human.matching(_kind(root, agent_id, "m.audio")) == []


async def test_voice_reply_a_failed_speech_call_leaves_the_text_answer_alone(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e), "replies": True})
    e2e.model_server.speech.fail(503, "speech service down")

    root = await _send_voice(human, room_id, ogg_opus_tone(0.5))
    text = await human.wait_for(_kind(root, agent_id, "m.text"))
    await e2e.idle()

    assert text["content"]["body"] == ANSWER
    assert len(e2e.model_server.speech.requests) == 1
    assert human.matching(_kind(root, agent_id, "m.audio")) == []
    bodies = [e["content"].get("body", "") for e in human.matching(thread_replies(root, agent_id))]
    assert not any("speech" in body.lower() or "503" in body for body in bodies)


async def test_voice_reply_a_speech_service_alone_turns_no_replies_on(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e)})

    root = await _send_voice(human, room_id, ogg_opus_tone(0.5))
    await human.wait_for(_kind(root, agent_id, "m.text"))
    await e2e.idle()

    assert e2e.model_server.speech.requests == []


async def test_voice_reply_voice_on_in_a_room_turns_them_on_there(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e)})
    router_id = e2e.user_id("router")

    command = await human.send(room_id, "!voice on")
    said = await human.wait_for(lambda e: e.get("sender") == router_id and "voice" in e["content"].get("body", ""))
    root = await _send_voice(human, room_id, ogg_opus_tone(0.5))
    voice = await human.wait_for(_kind(root, agent_id, "m.audio"))

    assert command and said["content"]["body"].startswith("✅ Agents here now answer voice messages in text, then")
    assert voice["content"]["org.matrix.msc3245.voice"] == {}
    assert [r.input for r in e2e.model_server.speech.requests] == [ANSWER]


def _tool_result(e2e: E2E) -> dict[str, Any]:
    message = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"][-1]["messages"][-1]
    assert message["role"] == "tool", message
    return json.loads(message["content"])


async def test_voice_reply_the_voice_message_tool_speaks_into_the_agents_thread(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e)}, tools=("matrix_voice_message",))
    e2e.model_server.speech.speak_for(0.7)
    e2e.model_server.script(
        ToolCall("matrix_voice_message", {"text": "Dinner is at eight.", "companion_message": "Spoken note:"}),
        Text("I said it aloud."),
        model="agent-model",
    )

    root = await human.send(room_id, "say it out loud")
    voice = await human.wait_for(_kind(root, agent_id, "m.audio"))
    await human.wait_for(lambda e: _kind(root, agent_id, "m.text")(e) and e["content"]["body"] == "I said it aloud.")

    result = _tool_result(e2e)
    assert result["status"] == "ok" and result["event_id"] == voice["event_id"] and result["thread_id"] == root
    companion = [e for e in human.matching(_kind(root, agent_id, "m.text")) if e["content"]["body"] == "Spoken note:"]
    assert [e["event_id"] for e in companion] == [result["companion_event_id"]]
    content = voice["content"]
    assert voice.get("decrypted") is True and content["org.matrix.msc3245.voice"] == {}
    assert content["body"] == "Voice message" and 680 <= content["info"]["duration"] <= 720
    assert [r.input for r in e2e.model_server.speech.requests] == ["Dinner is at eight."]


async def test_voice_reply_the_voice_message_tool_tells_the_model_when_speech_fails(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e)}, tools=("matrix_voice_message",))
    e2e.model_server.speech.fail(500, "no voice today")
    e2e.model_server.script(
        ToolCall("matrix_voice_message", {"text": "Dinner is at eight."}), Text("Could not speak."), model="agent-model"
    )

    root = await human.send(room_id, "say it out loud")
    await human.wait_for(lambda e: _kind(root, agent_id, "m.text")(e) and e["content"]["body"] == "Could not speak.")

    result = _tool_result(e2e)
    assert result["status"] == "error" and "no voice today" in result["message"]
    assert human.matching(_kind(root, agent_id, "m.audio")) == []


async def test_voice_reply_agnos_speech_toolkit_sends_its_opus_recording_as_a_voice_message(e2e: E2E, monkeypatch):
    """agno's `OpenAITools` by MindRoom's name `openai`, asked for `opus`: its `generate_speech` (which takes
    agno's running agent) calls the speech endpoint, and the recording arrives as a voice message."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{e2e.model_server.url}/v1")  # agno's own client reads it from there
    environment = e2e.environment
    e2e.environment = lambda path: dataclasses.replace(  # type: ignore[method-assign]
        environment(path), values={**environment(path).values, "OPENAI_API_KEY": "sk-test-speech"}
    )
    speech = {"enable_transcription": False, "enable_image_generation": False, "text_to_speech_format": "opus"}
    human, room_id, agent_id = await _world(e2e, {}, tools=({"openai": speech},))  # type: ignore[arg-type]
    e2e.model_server.speech.speak_for(0.9)
    e2e.model_server.script(
        ToolCall("generate_speech", {"text_input": "The table is booked."}), Text("Here it is, spoken."),
        model="agent-model",
    )  # fmt: skip

    root = await human.send(room_id, "say that the table is booked")
    voice = await human.wait_for(_kind(root, agent_id, "m.audio"))

    content = voice["content"]
    assert voice.get("decrypted") is True and content["org.matrix.msc3245.voice"] == {}
    assert content["info"]["mimetype"] == "audio/ogg" and 880 <= content["info"]["duration"] <= 920
    recording = decrypt_attachment(
        await _download(human, content["file"]["url"]),
        content["file"]["key"]["k"], content["file"]["hashes"]["sha256"], content["file"]["iv"],
    )  # fmt: skip
    assert abs(_decoded_ms(recording) - content["info"]["duration"]) <= 20
    assert [r.input for r in e2e.model_server.speech.requests] == ["The table is booked."]
