"""Voice messages' audio facts: length from the Ogg pages (less Opus's pre-skip), waveform from packet sizes."""

from __future__ import annotations

import io
import struct

import av
import pytest

from mindroom.matrix.voice import OggOpusError, VoiceAudio, read_ogg_opus, voice_content
from mindroom.testing.model_speech import ogg_opus_tone


def _decoded_ms(data: bytes) -> int:
    with av.open(io.BytesIO(data)) as container:
        return sum(frame.samples for frame in container.decode(audio=0)) * 1000 // 48_000


@pytest.mark.parametrize("seconds", [0.3, 1.0, 2.75])
def test_voice_length_is_what_a_decoder_plays(seconds: float):
    data = ogg_opus_tone(seconds)

    audio = read_ogg_opus(data)

    assert audio.duration_ms == round(seconds * 1000)
    assert abs(audio.duration_ms - _decoded_ms(data)) <= 20


def test_voice_waveform_is_at_most_a_hundred_bars_scaled_to_1024():
    audio = read_ogg_opus(ogg_opus_tone(4.0))

    assert 1 <= len(audio.waveform) <= 100
    assert all(isinstance(v, int) and 0 <= v <= 1024 for v in audio.waveform) and max(audio.waveform) == 1024
    # The tone swells from silence: its first bars are quieter than its last.
    assert sum(audio.waveform[:10]) < sum(audio.waveform[-10:])


def _page(granule: int, packets: list[bytes], serial: int = 7) -> bytes:
    lacing = b"".join(bytes([255] * (len(p) // 255) + [len(p) % 255]) for p in packets)
    header = struct.pack("<4sBBqIIIB", b"OggS", 0, 0, granule, serial, 0, 0, len(lacing))
    return header + lacing + b"".join(packets)


def _head(pre_skip: int) -> bytes:
    return b"OpusHead" + struct.pack("<BBHIhB", 1, 1, pre_skip, 48_000, 0, 0)


def test_voice_length_subtracts_the_pre_skip_and_reads_packets_across_lacing():
    pages = _page(0, [_head(312)]) + _page(0, [b"OpusTags" + b"\0" * 8]) + _page(48_312, [b"x" * 300, b"y" * 3])

    audio = read_ogg_opus(pages)

    assert audio.duration_ms == 1000 and audio.waveform == (1024, 10)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"RIFF" + b"\0" * 60, id="wav"),
        pytest.param(b"OggS" + b"\0" * 10, id="truncated-header"),
        pytest.param(_page(0, [b"\x01vorbis" + b"\0" * 30]) + _page(0, [b"\x03vorbis"]), id="ogg-vorbis"),
        pytest.param(_page(0, [b"OpusHeadX"]) + _page(0, [b"OpusTags"]), id="short-opus-head"),
        pytest.param(ogg_opus_tone(0.2)[:-10], id="cut-short"),
    ],
)
def test_voice_refuses_what_is_not_ogg_opus(data: bytes):
    with pytest.raises(OggOpusError):
        read_ogg_opus(data)


def test_voice_content_is_flagged_as_voice_with_length_and_waveform():
    audio = VoiceAudio(b"OggS-bytes", 1234, (0, 512, 1024))

    content = voice_content(audio, "Voice message", {"url": "mxc://s/m"})

    assert content["msgtype"] == "m.audio" and content["url"] == "mxc://s/m"
    assert content["org.matrix.msc3245.voice"] == {}
    assert content["org.matrix.msc1767.audio"] == {"duration": 1234, "waveform": [0, 512, 1024]}
    assert content["info"] == {"mimetype": "audio/ogg", "size": 10, "duration": 1234}
