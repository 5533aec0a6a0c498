"""What follows a delivered answer in its thread: the files its tools made, then, when it answers a voice
message, the answer spoken as a voice message.

Only a voice message is answered in voice, and only where voice replies are on for the agent: `!voice on|off`
in the room, else `voice.replies` in config.yaml; a text turn never reaches the speech service. A failed
speech call (or audio that is not Ogg/Opus) is logged as a warning; the text answer stands alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mindroom import ai
from mindroom.bots.outbox import send_files
from mindroom.bots.runtime import Entity, LiveState
from mindroom.config.voice import TextToSpeechConfig
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id
from mindroom.matrix.voice import OggOpusError, VoiceAudio, read_ogg_opus
from mindroom.tool_system.spec import OutboundFile

__all__ = ["ROOM_VOICE_KEY", "follow_answer", "speak_answer", "voice_audio", "voice_replies_on"]

logger = get_logger(__name__)

ROOM_VOICE_KEY = "voice_replies"
"""The room setting `!voice on|off` keeps (true or false)."""


def voice_replies_on(live: LiveState, entity: str, room_id: str) -> bool:
    """Whether `entity` answers voice messages in `room_id` in voice too: the room's setting, else config's."""
    voice = live.config.voice
    if voice.tts is None:
        return False
    here = live.settings.get("room", ROOM_VOICE_KEY, room_id)
    return bool(here.value) if here is not None else voice.replies_for(entity)


async def voice_audio(service: TextToSpeechConfig, text: str, env: Mapping[str, str]) -> VoiceAudio:
    """`text` spoken by `service`, read as a voice message's recording (`SpeechError`, `OggOpusError`)."""
    return read_ogg_opus(await ai.synthesize(service, text, env))


async def speak_answer(
    entity: Entity, live: LiveState, envelope: MessageEnvelope, text: str, env: Mapping[str, str]
) -> str | None:
    """Send `text` spoken, in the answer's thread; the voice message's event id, or None when none was sent."""
    tts = live.config.voice.tts
    if tts is None or not voice_replies_on(live, entity.name, envelope.room_id):
        return None
    spoken = ai.spoken_text(text, tts.max_chars)
    if not spoken:
        return None
    try:
        audio = await voice_audio(tts, spoken, env)

        async def send(txn_id: str) -> str:
            return await entity.client.send_voice(
                envelope.room_id,
                audio,
                "Voice message",
                thread_root=envelope.resolved_thread_id,
                reply_to=envelope.source_event_id,
                txn_id=txn_id,
            )

        txn_id = stable_txn_id(entity.name, envelope.source_event_id, "voice")
        event_id = await send_until_accepted(send, "voice reply", txn_id)
    except (ai.SpeechError, OggOpusError, MatrixError) as exc:
        logger.warning("voice reply not sent", agent=entity.name, event_id=envelope.source_event_id, error=str(exc))
        return None
    logger.info("voice reply sent", agent=entity.name, duration_ms=audio.duration_ms, chars=len(spoken))
    return event_id


async def follow_answer(
    entity: Entity,
    live: LiveState,
    envelope: MessageEnvelope,
    files: Sequence[OutboundFile],
    text: str,
    env: Mapping[str, str],
) -> None:
    """After the answer: its files, then (for a voice message) the answer spoken."""
    await send_files(entity, envelope, files)
    if envelope.source_kind == "voice":
        await speak_answer(entity, live, envelope, text, env)
