"""The scripted server's `/v1/audio/speech`: real Ogg/Opus audio made with PyAV (FFmpeg's libopus), and failures.

Each request is kept (`ScriptedSpeech.requests`); the answer is a tone of `seconds` seconds encoded as Opus in
Ogg, the format OpenAI's endpoint returns for `response_format: opus`, or the error `fail` scripts.
"""

from __future__ import annotations

import array
import io
import json
import math
import threading
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

__all__ = ["SAMPLE_RATE", "ScriptedSpeech", "SpeechRequest", "ogg_opus_tone"]

SAMPLE_RATE = 48_000
_FRAME = 960  # 20 ms at 48 kHz, Opus's usual frame
_KNOWN = ("model", "voice", "input", "response_format")


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One request to the scripted `/audio/speech`: its model, voice, text, format, and the bearer key."""

    model: str
    voice: str
    input: str
    response_format: str
    api_key: str
    extra: dict[str, Any]


def ogg_opus_tone(seconds: float, frequency: float = 220.0) -> bytes:
    """`seconds` of a tone that swells from silence, encoded as mono Opus at 48 kHz in an Ogg file."""
    import av  # the test extra's; only a scripted speech answer needs it

    buffer = io.BytesIO()
    total = round(seconds * SAMPLE_RATE)
    with av.open(buffer, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=SAMPLE_RATE, layout="mono")
        for start in range(0, total, _FRAME):
            count = min(_FRAME, total - start)
            samples = array.array(
                "h",
                (
                    int(16_000 * (start + i) / total * math.sin(2 * math.pi * frequency * (start + i) / SAMPLE_RATE))
                    for i in range(count)
                ),
            )
            frame = av.AudioFrame(format="s16", layout="mono", samples=count)
            frame.planes[0].update(samples.tobytes())
            frame.sample_rate = SAMPLE_RATE
            frame.pts = start
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


class ScriptedSpeech:
    """What `/audio/speech` answers (a tone of `seconds`, or a scripted error) and what it was asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[SpeechRequest] = []
        self._seconds = 1.0
        self._failure: tuple[int, str] | None = None
        self._cache: dict[float, bytes] = {}

    def speak_for(self, seconds: float) -> None:
        """Answer each request with a tone this long (1 s unless set) and no failure."""
        with self._lock:
            self._seconds, self._failure = seconds, None

    def fail(self, status: int = HTTPStatus.INTERNAL_SERVER_ERROR, message: str = "speech failed") -> None:
        """Answer each request with this HTTP error until `speak_for` or `reset`."""
        with self._lock:
            self._failure = (int(status), message)

    def reset(self) -> None:
        """Forget the requests, and answer with a 1 s tone again."""
        with self._lock:
            self._requests.clear()
            self._seconds, self._failure = 1.0, None

    @property
    def requests(self) -> list[SpeechRequest]:
        """Every speech request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def answer(self, raw: bytes, authorization: str) -> tuple[int, str, bytes]:
        """The HTTP status, content type and body answering one request."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("input"), str):
            return _error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object with input")
        request = SpeechRequest(
            model=str(body.get("model", "")),
            voice=str(body.get("voice", "")),
            input=body["input"],
            response_format=str(body.get("response_format", "")),
            api_key=authorization.removeprefix("Bearer "),
            extra={key: value for key, value in body.items() if key not in _KNOWN},
        )
        with self._lock:
            self._requests.append(request)
            failure, seconds = self._failure, self._seconds
        if failure is not None:
            return _error(*failure)
        if seconds not in self._cache:
            self._cache[seconds] = ogg_opus_tone(seconds)
        return HTTPStatus.OK, "audio/ogg", self._cache[seconds]


def _error(status: int, message: str) -> tuple[int, str, bytes]:
    error = {"error": {"message": message, "type": "scripted_error", "param": None, "code": None}}
    return status, "application/json", json.dumps(error).encode()
