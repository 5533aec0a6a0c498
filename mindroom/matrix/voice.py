"""Voice messages as Matrix clients play them: an Ogg/Opus file's length and waveform, and the `m.audio` content.

The length comes from the Ogg pages themselves: an Opus stream counts 48 kHz samples in each page's granule
position, so the last page's position less the stream's pre-skip (in its `OpusHead`) is the whole length.
The waveform is drawn from the sizes of the audio packets: Opus spends more bytes on louder, busier sound,
so the sizes, averaged into up to 100 bars and scaled to 0..1024 (the loudest bar is 1024), trace the voice
without decoding it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.errors import MindroomError

__all__ = ["VOICE_MIMETYPE", "OggOpusError", "VoiceAudio", "read_ogg_opus", "voice_content"]

VOICE_MIMETYPE = "audio/ogg"
_SAMPLES_PER_MS = 48
_MAX_BARS = 100
_WAVEFORM_TOP = 1024
_PAGE_HEADER = struct.Struct("<4sBBqIIIB")  # capture, version, flags, granule, serial, sequence, checksum, segments


class OggOpusError(MindroomError, ValueError):
    """The bytes are not an Ogg/Opus stream this module can read."""


@dataclass(frozen=True, slots=True)
class VoiceAudio:
    """An Ogg/Opus voice recording: its bytes, length in milliseconds, and waveform (ints 0..1024)."""

    data: bytes
    duration_ms: int
    waveform: tuple[int, ...]


def _packets(data: bytes) -> tuple[list[bytes], int]:
    """The packets of the first logical stream, and its last granule position."""
    packets: list[bytes] = []
    pending = b""
    serial: int | None = None
    last_granule = -1
    offset = 0
    while offset < len(data):
        if len(data) - offset < _PAGE_HEADER.size:
            raise OggOpusError("the audio ends inside an Ogg page header")
        capture, version, _flags, granule, page_serial, _seq, _crc, count = _PAGE_HEADER.unpack_from(data, offset)
        if capture != b"OggS" or version != 0:
            raise OggOpusError("the audio is not an Ogg stream")
        lacing = data[offset + _PAGE_HEADER.size : offset + _PAGE_HEADER.size + count]
        body = offset + _PAGE_HEADER.size + count
        offset = body + sum(lacing)
        if len(lacing) != count or offset > len(data):
            raise OggOpusError("the audio ends inside an Ogg page")
        serial = page_serial if serial is None else serial
        if page_serial != serial:
            continue  # another logical stream (none in a voice message): not ours to count
        for size in lacing:
            pending += data[body : body + size]
            body += size
            if size < 255:  # a lacing value under 255 ends the packet
                packets.append(pending)
                pending = b""
        if granule >= 0:
            last_granule = granule
    return packets, last_granule


def _waveform(sizes: list[int]) -> tuple[int, ...]:
    if not sizes:
        return ()
    bars = min(_MAX_BARS, len(sizes))
    sums = [0.0] * bars
    counts = [0] * bars
    for index, size in enumerate(sizes):
        bar = index * bars // len(sizes)
        sums[bar] += size
        counts[bar] += 1
    means = [total / count for total, count in zip(sums, counts, strict=True)]
    top = max(means)
    return tuple(round(mean * _WAVEFORM_TOP / top) if top else 0 for mean in means)


def read_ogg_opus(data: bytes) -> VoiceAudio:
    """The length and waveform of an Ogg/Opus recording; `OggOpusError` when it is not one."""
    packets, granule = _packets(data)
    if len(packets) < 2 or not packets[0].startswith(b"OpusHead") or len(packets[0]) < 19:
        raise OggOpusError("the audio is not Opus in Ogg (no OpusHead)")
    if not packets[1].startswith(b"OpusTags"):
        raise OggOpusError("the Opus stream has no OpusTags")
    pre_skip = struct.unpack_from("<H", packets[0], 10)[0]
    if granule < 0:
        raise OggOpusError("the Opus stream has no audio page")
    duration_ms = max(0, granule - pre_skip) // _SAMPLES_PER_MS
    return VoiceAudio(data, duration_ms, _waveform([len(packet) for packet in packets[2:]]))


def voice_content(audio: VoiceAudio, body: str, media: Mapping[str, Any]) -> dict[str, Any]:
    """The `m.audio` content of a voice message (flagged as voice, with length and waveform) around the
    uploaded file's `media` fields (`url`, or `file` in an encrypted room)."""
    return {
        "msgtype": "m.audio",
        "body": body,
        "filename": "voice-message.ogg",
        "info": {"mimetype": VOICE_MIMETYPE, "size": len(audio.data), "duration": audio.duration_ms},
        "org.matrix.msc1767.text": body,
        "org.matrix.msc1767.audio": {"duration": audio.duration_ms, "waveform": list(audio.waveform)},
        "org.matrix.msc3245.voice": {},
        **media,
    }
