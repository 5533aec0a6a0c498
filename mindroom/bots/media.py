"""Voice, images and files in a message: downloaded once per event, kept as attachments, made into a turn.

- Voice (`m.audio`): transcribed through the configured provider's OpenAI-compatible endpoint; the
  turn's text is `VOICE_PREFIX` + the transcript, or a placeholder telling the agent it cannot listen.
- Images (`m.image`): the turn carries their attachment ids; the model sees them if it takes images.
- Files and video: the turn says what arrived and under which attachment id tools and hooks read it.

Every entity that handles the event (the router and each agent) shares one download and transcription.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mindroom import ai
from mindroom.bots.ingress import InboundMessage
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.sharing import SharedWork
from mindroom.config.main import ModelConfig
from mindroom.constants import VOICE_PREFIX
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent
from mindroom.matrix.media import MediaTooLargeError, media_source
from mindroom.state.attachments import AttachmentStore

__all__ = ["MEDIA_KINDS", "NO_TRANSCRIPTION", "VOICE_OFF", "MediaIntake", "PreparedMedia", "images_for_model"]

logger = get_logger(__name__)

MEDIA_KINDS = frozenset({"voice", "image", "file", "video"})
NO_TRANSCRIPTION = (
    "[A voice message arrived, but no speech-to-text is set up for this agent, so its words are unknown. "
    "Say that you cannot listen to voice messages, and ask for the message as text.]"
)
VOICE_OFF = (
    "[A voice message arrived; voice messages are not transcribed here, so its words are unknown. "
    "Say that you cannot listen to voice messages, and ask for the message as text.]"
)


@dataclass(frozen=True, slots=True)
class PreparedMedia:
    """What a message with an attachment becomes: the turn's text, its attachments, and which are images."""

    body: str
    attachment_ids: tuple[str, ...] = ()
    image_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MediaIntake:
    """Makes a message with an attachment into a turn: the download and transcription shared by every entity
    (`work`), the attachment store, and the environment the transcription provider reads."""

    work: SharedWork
    attachments: AttachmentStore
    env: Mapping[str, str]

    async def prepare(
        self, entity: Entity, live: LiveState, inbound: InboundMessage, event: MatrixEvent
    ) -> InboundMessage:
        """`inbound` with its attachment downloaded and its text made from it (unchanged for plain text)."""
        envelope = inbound.envelope
        if envelope.source_kind not in MEDIA_KINDS or media_source(event.content) is None:
            return inbound
        prepared: PreparedMedia = await self.work.once(
            event.event_id, lambda: self._prepare(entity, live, event, envelope.source_kind)
        )
        new_envelope = dataclasses.replace(envelope, body=prepared.body, attachment_ids=prepared.attachment_ids)
        return dataclasses.replace(inbound, envelope=new_envelope, image_ids=prepared.image_ids)

    async def _prepare(self, entity: Entity, live: LiveState, event: MatrixEvent, kind: str) -> PreparedMedia:
        limit = live.config.defaults.max_attachment_bytes
        try:
            media = await entity.client.download_media(event.content, limit)
        except MediaTooLargeError:
            logger.info("attachment too large", agent=entity.name, event_id=event.event_id, limit=limit)
            return PreparedMedia(f"[An attachment arrived that is larger than this agent takes ({limit} bytes).]")
        except MindroomError as exc:
            logger.warning("attachment download failed", agent=entity.name, event_id=event.event_id, error=str(exc))
            return PreparedMedia("[An attachment arrived that could not be downloaded.]")
        info = await asyncio.to_thread(
            self.attachments.put,
            media.data,
            name=media.name,
            mimetype=media.mimetype,
            room_id=event.room_id,
            event_id=event.event_id,
        )
        ids = (info.attachment_id,)
        caption = _caption(event, media.name)
        if kind == "voice":
            transcript = await _transcript(entity, live, media.data, media.name, media.mimetype, self.env)
            return PreparedMedia(VOICE_PREFIX + transcript, ids)
        if kind == "image":
            return PreparedMedia(f"[image: {media.name}]" + (f" {caption}" if caption else ""), ids, ids)
        kind_of = media.mimetype or "unknown type"
        note = f"[{kind} attached: {media.name}, {kind_of}, {info.size} bytes; attachment {info.attachment_id}]"
        return PreparedMedia(note + (f" {caption}" if caption else ""), ids)


def _caption(event: MatrixEvent, name: str) -> str:
    """A caption the sender wrote (Matrix puts it in `body` when `filename` names the file)."""
    body = event.content.get("body")
    filename = event.content.get("filename")
    if isinstance(body, str) and isinstance(filename, str) and body != filename and body != name:
        return body
    return ""


async def _transcript(
    entity: Entity, live: LiveState, audio: bytes, name: str, mimetype: str | None, env: Mapping[str, str]
) -> str:
    voice = live.config.voice
    if voice.enabled is False:
        return VOICE_OFF
    transcription_id, fields = voice.transcription_id, {}
    if voice.stt is not None:  # MindRoom's own speech-to-text service
        model: ModelConfig | None = ai.speech_service_model(voice.stt)
        transcription_id, fields = voice.stt.model, voice.stt.extra_kwargs
    else:
        model = live.config.models.get(voice.model or "default")
    if model is None:
        return NO_TRANSCRIPTION
    try:
        text = await ai.transcribe(model, transcription_id, audio, name, mimetype, env, fields)
    except ai.TranscriptionError:
        return "[A voice message arrived, but transcribing it failed. Say so, and ask for the message as text.]"
    if text is None:
        return NO_TRANSCRIPTION
    logger.info("voice message transcribed", agent=entity.name, chars=len(text))
    return text


async def images_for_model(
    store: AttachmentStore, image_ids: Sequence[str], model: ModelConfig
) -> tuple[tuple[ai.ImageInput, ...], str]:
    """A message's images for a model that takes them; for one that does not, a note on what arrived."""
    if not image_ids:
        return (), ""
    found = [item for item in [await asyncio.to_thread(store.read, i) for i in image_ids] if item is not None]
    if ai.supports_vision(model):
        return tuple(ai.ImageInput(item.data, item.info.mimetype) for item in found), ""
    notes = [f"{item.info.name} ({item.info.mimetype or 'image'}, {item.info.size} bytes)" for item in found]
    return (), "\n[The sender attached images this model cannot see: " + "; ".join(notes) + ".]"
