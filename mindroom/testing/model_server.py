"""A scripted model server on loopback, the one stand-in for paid model providers.

It speaks OpenAI's Chat Completions and Responses APIs (under `base_url`, `/v1`, with `/audio/transcriptions`
and `/audio/speech`), Anthropic's Messages API (`/v1/messages`, the Anthropic client's `base_url` is `url`)
and Ollama's chat API (`/api/chat`, Ollama's host is `url`), each with text, streaming, tool calls, token
usage, errors and stalls, so that every provider's real client talks HTTP to it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, Self

import pytest

from mindroom.logging_config import get_logger
from mindroom.testing.model_api import Answer, ModelApi, Usage, word_count
from mindroom.testing.model_http import ModelHttpServer, ModelRequestHandler
from mindroom.testing.model_replies import (
    ContextOverflow,
    Delay,
    Echo,
    Hang,
    HttpError,
    Predicate,
    Reply,
    Stall,
    Stream,
    Text,
    ToolCall,
    Transcription,
    last_user_message,
    parse_transcription,
)
from mindroom.testing.model_speech import ScriptedSpeech

__all__ = [
    "ContextOverflow",
    "Delay",
    "Echo",
    "Hang",
    "HttpError",
    "Predicate",
    "Reply",
    "ScriptedModelServer",
    "Stall",
    "Stream",
    "Text",
    "ToolCall",
    "Transcription",
    "Usage",
    "last_user_message",
    "model_server",
    "model_server_session",
]

logger = get_logger(__name__)

_POLL_INTERVAL_S = 0.05
# `wait_for_requests`' default: long, for a loaded machine (a passing test never waits it out).
_WAIT_TIMEOUT_S = 60.0


class _Script:
    """Queued replies, rules and defaults; every method is called under the server's lock."""

    def __init__(self) -> None:
        self.queues: dict[str | None, deque[Reply]] = {}
        self.defaults: dict[str | None, Reply] = {None: Echo()}
        self.rules: list[tuple[Predicate, Reply]] = []

    def pick(self, request: dict[str, Any]) -> Reply:
        """Rules first, then the model's queue, the global queue, the model's default, the global default."""
        model = request.get("model")
        for predicate, reply in self.rules:
            if predicate(request):
                return reply
        for key in (model, None):
            queue = self.queues.get(key)
            if queue:
                return queue.popleft()
        return self.defaults.get(model, self.defaults[None])


class ScriptedModelServer:
    """An OpenAI-compatible server in its own thread, answering from a script of replies."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._lock = threading.Condition()
        self._script = _Script()
        self._requests: list[dict[str, Any]] = []
        self._apis: list[str] = []
        self._cached_tokens = 0
        self._transcriptions: list[Transcription] = []
        self._transcript: str | None = None
        self.speech = ScriptedSpeech()
        """What `/audio/speech` answers, and the requests it had."""
        self._stopping = threading.Event()
        self._httpd: ModelHttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (fixed after the first start, so a restart reuses it)."""
        return self._port

    @property
    def url(self) -> str:
        """The server's root, e.g. `http://127.0.0.1:PORT`: the Anthropic client's `base_url`, Ollama's host."""
        return f"http://{self.host}:{self._port}"

    @property
    def base_url(self) -> str:
        """The OpenAI `base_url` of this server, e.g. `http://127.0.0.1:PORT/v1`."""
        return f"http://{self.host}:{self._port}/v1"

    @property
    def running(self) -> bool:
        """Whether the server is accepting connections."""
        return self._httpd is not None

    def start(self) -> Self:
        """Bind and start serving in a background thread (a no-op when already running)."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = ModelHttpServer((self.host, self._port), ModelRequestHandler, self)
        self._port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(_POLL_INTERVAL_S,), daemon=True)
        self._thread.start()
        logger.debug("model server started", port=self._port)
        return self

    def stop(self) -> None:
        """Stop serving, release hanging requests and drop open connections; scripts and records are kept."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None
        logger.debug("model server stopped", port=self._port)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *_exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    def script(self, *replies: Reply, model: str | None = None) -> None:
        """Queue replies, answered first in first out (for requests to `model` only, when given)."""
        with self._lock:
            self._script.queues.setdefault(model, deque()).extend(replies)

    def set_default(self, reply: Reply, model: str | None = None) -> None:
        """The reply when no rule matches and the queues are empty (`Echo()` unless set)."""
        with self._lock:
            self._script.defaults[model] = reply

    def when(self, predicate: Predicate, reply: Reply) -> None:
        """Answer every request the predicate accepts with `reply` (rules win over queues, first rule first)."""
        with self._lock:
            self._script.rules.append((predicate, reply))

    def reset(self) -> None:
        """Forget queued replies, rules, defaults and recorded requests."""
        with self._lock:
            self._script = _Script()
            self._requests.clear()
            self._apis.clear()
            self._cached_tokens = 0
            self._transcriptions.clear()
            self._transcript = None
        self.speech.reset()

    def set_cached_tokens(self, tokens: int) -> None:
        """Report this many input tokens of every answer as read from the provider's cache (0 by default)."""
        with self._lock:
            self._cached_tokens = tokens

    def set_transcript(self, text: str | None) -> None:
        """What `/audio/transcriptions` answers (None: a text naming the audio's size)."""
        with self._lock:
            self._transcript = text

    @property
    def transcriptions(self) -> list[Transcription]:
        """Every transcription request received, oldest first."""
        with self._lock:
            return list(self._transcriptions)

    def _transcribe(self, content_type: str, raw: bytes, authorization: str = "") -> str:
        received = parse_transcription(content_type, raw, authorization)
        with self._lock:
            self._transcriptions.append(received)
            return self._transcript if self._transcript is not None else f"transcript of {len(received.audio)} bytes"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the model request bodies received so far (every API), oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, api: str) -> list[dict[str, Any]]:
        """The request bodies sent to one API: `chat_completions`, `responses`, `anthropic` or `ollama`."""
        with self._lock:
            return [request for request, name in zip(self._requests, self._apis, strict=True) if name == api]

    def wait_for_requests(self, n: int, timeout: float = _WAIT_TIMEOUT_S) -> list[dict[str, Any]]:
        """Block until at least `n` requests arrived and return them; `TimeoutError` otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout=timeout):
                msg = f"expected {n} model requests within {timeout}s, got {len(self._requests)}"
                raise TimeoutError(msg)
            return list(self._requests)

    async def wait_for_requests_async(
        self,
        n: int,
        timeout: float = _WAIT_TIMEOUT_S,  # noqa: ASYNC109
    ) -> list[dict[str, Any]]:
        """`wait_for_requests` without blocking the event loop (for daemons running in-process)."""
        return await asyncio.to_thread(self.wait_for_requests, n, timeout)

    def _record(self, api: str, request: dict[str, Any]) -> Reply:
        with self._lock:
            self._requests.append(request)
            self._apis.append(api)
            self._lock.notify_all()
            return self._script.pick(request)

    def _usage(self, api: ModelApi, request: dict[str, Any], answer: Answer) -> Usage:
        prompt = word_count(api.texts(request))
        with self._lock:
            cached = min(self._cached_tokens, prompt)
        return Usage(prompt, word_count([answer.text]), cached)

    def _known_models(self) -> list[str]:
        with self._lock:
            names = {key for key in self._script.queues if key} | {key for key in self._script.defaults if key}
        return sorted(names | {"scripted"})

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when it is still running."""
        return not self._stopping.wait(seconds)


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A fresh scripted model server for one test."""
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def model_server_session() -> Iterator[ScriptedModelServer]:
    """One scripted model server for the whole test session (call `reset()` between uses)."""
    with ScriptedModelServer() as server:
        yield server
