"""MindRoom's `voice` keys on a real homeserver: `voice.stt` names the speech-to-text service and model used,
`voice.enabled: false` leaves voice messages untranscribed (the agent is told so)."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.bots.media import NO_TRANSCRIPTION, VOICE_OFF
from mindroom.constants import VOICE_PREFIX
from mindroom.testing.model_server import Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

AUDIO = b"OggS" + bytes(range(256)) * 4


async def _voice_turn(e2e: E2E, voice: dict[str, Any]) -> str:
    """A voice message to an agent under `voice:`; the user message its model was sent."""
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}, voice=voice)
    e2e.model_server.set_default(Text("heard you"))
    e2e.model_server.set_transcript("call me back at noon")
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    event_id = await human.send_media(room_id, "m.audio", AUDIO, name="voice.ogg", mimetype="audio/ogg")
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    return last_user_message(e2e.model_server.requests[-1])


async def test_voice_stt_names_the_service_and_model_that_transcribe(e2e: E2E):
    stt = {"provider": "openai_compatible", "host": e2e.model_server.base_url, "model": "whisper-large-v3"}

    text = await _voice_turn(e2e, {"enabled": True, "stt": stt, "model": "routing"})

    assert text.startswith(VOICE_PREFIX + "call me back at noon")
    (transcription,) = e2e.model_server.transcriptions
    assert transcription.model == "whisper-large-v3" and transcription.audio == AUDIO


async def test_voice_enabled_false_leaves_voice_untranscribed_and_says_so(e2e: E2E):
    text = await _voice_turn(e2e, {"enabled": False})

    assert text.startswith(VOICE_PREFIX + VOICE_OFF)
    assert VOICE_OFF != NO_TRANSCRIPTION
    assert e2e.model_server.transcriptions == []
