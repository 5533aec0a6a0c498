"""Voice, images and files on a real homeserver: downloaded, transcribed or shown, and kept as attachments."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mindroom.bots.media import NO_TRANSCRIPTION
from mindroom.constants import VOICE_PREFIX
from mindroom.state.attachments import AttachmentStore
from mindroom.testing.model_server import Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

AUDIO = b"OggS" + bytes(range(256)) * 8
IMAGE = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


async def _world(e2e: E2E, **extra: Any) -> tuple[Any, str, str]:
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}, **extra)
    e2e.model_server.set_default(Text("heard you"))
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, e2e.user_id(agent), room_id


async def _asked(e2e: E2E, human: Any, room_id: str, agent_user: str, event_id: str) -> dict:
    await human.wait_for(thread_replies(event_id, agent_user))
    return e2e.model_server.requests[-1]


async def test_media_a_voice_message_is_transcribed_once_and_answered_as_text(e2e: E2E):
    human, agent_user, room_id = await _world(e2e)
    e2e.model_server.set_transcript("please book a table for two")

    event_id = await human.send_media(room_id, "m.audio", AUDIO, name="voice.ogg", mimetype="audio/ogg")
    request = await _asked(e2e, human, room_id, agent_user, event_id)

    assert last_user_message(request).startswith(VOICE_PREFIX + "please book a table for two")
    (transcription,) = e2e.model_server.transcriptions  # router and agent share one
    assert transcription.audio == AUDIO and transcription.model == "whisper-1"


async def test_media_a_voice_message_without_speech_to_text_says_so(e2e: E2E):
    models = e2e.models()
    models["local"] = {"provider": "ollama", "id": "llama3.2"}
    human, agent_user, room_id = await _world(e2e, models=models, voice={"model": "local"})

    event_id = await human.send_media(room_id, "m.audio", AUDIO, name="voice.ogg", mimetype="audio/ogg")
    request = await _asked(e2e, human, room_id, agent_user, event_id)

    assert last_user_message(request).startswith(VOICE_PREFIX + NO_TRANSCRIPTION)
    assert e2e.model_server.transcriptions == []


@pytest.mark.parametrize("vision", [True, False])
async def test_media_an_image_reaches_a_vision_model_as_an_image_and_others_as_a_note(e2e: E2E, vision: bool):
    models = e2e.models()
    models["default"]["vision"] = vision
    human, agent_user, room_id = await _world(e2e, models=models)

    event_id = await human.send_media(
        room_id, "m.image", IMAGE, name="dot.png", mimetype="image/png", caption="what colour is this?"
    )
    request = await _asked(e2e, human, room_id, agent_user, event_id)

    text = last_user_message(request)
    assert text.startswith("[image: dot.png] what colour is this?")
    images = [
        part for message in request["messages"] if isinstance(message.get("content"), list)
        for part in message["content"] if part.get("type") == "image_url"
    ]  # fmt: skip
    if vision:
        assert len(images) == 1 and base64.b64encode(IMAGE).decode() in json.dumps(images)
    else:
        assert images == [] and "cannot see: dot.png (image/png" in text


async def test_media_a_file_becomes_an_attachment_within_the_size_limit(e2e: E2E):
    human, agent_user, room_id = await _world(e2e, defaults={"enable_streaming": False, "max_attachment_bytes": 4096})
    report = b"quarterly numbers\n" * 100

    event_id = await human.send_media(room_id, "m.file", report, name="report.txt", mimetype="text/plain")
    request = await _asked(e2e, human, room_id, agent_user, event_id)
    too_big = await human.send_media(room_id, "m.file", b"x" * 10_000, name="big.bin", mimetype="application/zip")
    request_too_big = await _asked(e2e, human, room_id, agent_user, too_big)

    text = last_user_message(request)
    assert text.startswith("[file attached: report.txt, text/plain, 1800 bytes; attachment ")
    attachment_id = text.split("attachment ")[1].split("]")[0]
    stored = AttachmentStore(e2e.storage).read(attachment_id)
    assert stored is not None and stored.data == report and stored.info.name == "report.txt"
    assert "larger than this agent takes (4096 bytes)" in last_user_message(request_too_big)
