"""The files and images an answer carries: listed in its draft for `message:before_response`, sent after it.

The tools of a turn put files in its outbox (`mindroom.tool_system.files_out`). The draft hooks transform
lists them in `extra_content["com.mindroom.attachments"]` (name, MIME type, size), so a hook sees what
goes out with the answer and may take an entry out (that file is then not sent); the listing itself is
not part of the answer's Matrix event. Once the answer is delivered, each remaining file follows in the
answer's thread as `m.image` or `m.file` (an Ogg/Opus recording, as agno's speech toolkits make when asked
for `opus`, as a voice message with its length and waveform), uploaded through the media API and encrypted
in an encrypted room, with a transaction id per file so a replayed turn does not post a file twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mindroom.bots.runtime import Entity
from mindroom.hooks.context import MessageEnvelope, ResponseDraft
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id
from mindroom.matrix.voice import OggOpusError, VoiceAudio, read_ogg_opus
from mindroom.tool_system.spec import OutboundFile

__all__ = ["ATTACHMENTS_KEY", "draft_listing", "send_files", "take_files"]

logger = get_logger(__name__)

ATTACHMENTS_KEY = "com.mindroom.attachments"


def draft_listing(files: Sequence[OutboundFile]) -> dict[str, Any] | None:
    """The draft's `extra_content` listing the turn's files (None when there are none)."""
    if not files:
        return None
    return {ATTACHMENTS_KEY: [{"name": f.name, "mimetype": f.mime_type, "size": len(f.data)} for f in files]}


def take_files(draft: ResponseDraft, files: Sequence[OutboundFile]) -> tuple[ResponseDraft, tuple[OutboundFile, ...]]:
    """The files the transformed draft still lists, and the draft without the listing."""
    if draft.extra_content is None or ATTACHMENTS_KEY not in draft.extra_content:
        return draft, ()
    extra = dict(draft.extra_content)
    listing = extra.pop(ATTACHMENTS_KEY)
    entries = listing if isinstance(listing, list) else []
    names = {entry.get("name") for entry in entries if isinstance(entry, dict)}
    return dataclasses.replace(draft, extra_content=extra or None), tuple(f for f in files if f.name in names)


async def send_files(entity: Entity, envelope: MessageEnvelope, files: Sequence[OutboundFile]) -> list[str]:
    """Post each file in the answer's thread; returns the event ids of those sent (a failed one is logged)."""
    sent: list[str] = []
    client = entity.client
    for index, file in enumerate(files):
        voice = _recording(file)

        async def send(txn_id: str, file: OutboundFile = file, voice: VoiceAudio | None = voice) -> str:
            if voice is not None:
                return await client.send_voice(
                    envelope.room_id,
                    voice,
                    file.name,
                    thread_root=envelope.resolved_thread_id,
                    reply_to=envelope.source_event_id,
                    txn_id=txn_id,
                )
            return await client.send_file(
                envelope.room_id,
                file.data,
                file.name,
                file.mime_type,
                thread_root=envelope.resolved_thread_id,
                reply_to=envelope.source_event_id,
                txn_id=txn_id,
            )

        txn_id = stable_txn_id(entity.name, envelope.source_event_id, f"file-{index}")
        try:
            sent.append(await send_until_accepted(send, "tool file", txn_id))
        except MatrixError as exc:
            logger.warning("a file of the answer could not be sent", agent=entity.name, file=file.name, error=str(exc))
    return sent


def _recording(file: OutboundFile) -> VoiceAudio | None:
    """The file as a voice message's recording when it is Ogg/Opus audio (by its bytes, not its name)."""
    if not file.mime_type.startswith("audio/") or not file.data.startswith(b"OggS"):
        return None
    try:
        return read_ogg_opus(file.data)
    except OggOpusError:
        return None  # Ogg of another codec (Vorbis): an ordinary file
