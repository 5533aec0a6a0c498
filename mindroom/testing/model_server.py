"""A scripted OpenAI-compatible chat-completions server on loopback, the one stand-in for paid model providers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest

from mindroom.logging_config import get_logger
from mindroom.testing.model_embeddings import embeddings_reply
from mindroom.testing.model_replies import (
    Delay,
    Echo,
    Hang,
    HttpError,
    Predicate,
    Reply,
    Stream,
    Text,
    ToolCall,
    Transcription,
    completion_id,
    envelope,
    last_user_message,
    parse_transcription,
    text_chunks,
    tool_call,
    usage,
)

__all__ = [
    "Delay",
    "Echo",
    "Hang",
    "HttpError",
    "Predicate",
    "Reply",
    "ScriptedModelServer",
    "Stream",
    "Text",
    "ToolCall",
    "Transcription",
    "last_user_message",
    "model_server",
    "model_server_session",
]

logger = get_logger(__name__)

_POLL_INTERVAL_S = 0.05


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
        self._transcriptions: list[Transcription] = []
        self._transcript: str | None = None
        self._stopping = threading.Event()
        self._httpd: _Httpd | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (fixed after the first start, so a restart reuses it)."""
        return self._port

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
        httpd = _Httpd((self.host, self._port), _Handler, self)
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
            self._transcriptions.clear()
            self._transcript = None

    def set_transcript(self, text: str | None) -> None:
        """What `/audio/transcriptions` answers (None: a text naming the audio's size)."""
        with self._lock:
            self._transcript = text

    @property
    def transcriptions(self) -> list[Transcription]:
        """Every transcription request received, oldest first."""
        with self._lock:
            return list(self._transcriptions)

    def _transcribe(self, content_type: str, raw: bytes) -> str:
        received = parse_transcription(content_type, raw)
        with self._lock:
            self._transcriptions.append(received)
            return self._transcript if self._transcript is not None else f"transcript of {len(received.audio)} bytes"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the chat-completions request bodies received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least `n` requests arrived and return them; `TimeoutError` otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout=timeout):
                msg = f"expected {n} model requests within {timeout}s, got {len(self._requests)}"
                raise TimeoutError(msg)
            return list(self._requests)

    async def wait_for_requests_async(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:  # noqa: ASYNC109
        """`wait_for_requests` without blocking the event loop (for daemons running in-process)."""
        return await asyncio.to_thread(self.wait_for_requests, n, timeout)

    def _record(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()
            return self._script.pick(request)

    def _known_models(self) -> list[str]:
        with self._lock:
            names = {key for key in self._script.queues if key} | {key for key in self._script.defaults if key}
        return sorted(names | {"scripted"})

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when it is still running."""
        return not self._stopping.wait(seconds)


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: ScriptedModelServer):
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (timeouts, stops) are expected; anything else is logged."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, TimeoutError)):
            logger.warning("model server handler failed", error=str(error))

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Httpd

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log of `http.server`."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") not in ("/v1/models", "/models"):
            self._send_error(HTTPStatus.NOT_FOUND, f"no route for GET {self.path}")
            return
        names = self.server.owner._known_models()
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "scripted"} for name in names]
        self._send_json(HTTPStatus.OK, {"object": "list", "data": data})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") in ("/v1/audio/transcriptions", "/audio/transcriptions"):
            text = self.server.owner._transcribe(self.headers.get("Content-Type", ""), raw)
            self._send_json(HTTPStatus.OK, {"text": text})
            return
        if self.path.rstrip("/") in ("/v1/embeddings", "/embeddings"):
            self._send_json(*embeddings_reply(raw))
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error(HTTPStatus.NOT_FOUND, f"no route for POST {self.path}")
            return
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._send_error(HTTPStatus.BAD_REQUEST, "request body must be a JSON object")
            return
        owner = self.server.owner
        reply = owner._record(request)
        while isinstance(reply, Delay):
            if not owner._sleep(reply.seconds):
                self.close_connection = True
                return
            reply = reply.then
        if isinstance(reply, Hang):
            owner._stopping.wait()
            self.close_connection = True
        elif isinstance(reply, HttpError):
            self._send_error(reply.status, reply.message)
        elif request.get("stream"):
            self._stream(request, reply)
        else:
            self._complete(request, reply)

    def _complete(self, request: dict[str, Any], reply: Echo | Text | Stream | ToolCall) -> None:
        if isinstance(reply, ToolCall):
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tool_call(reply)]}
            finish, text = "tool_calls", ""
        else:
            text = "".join(text_chunks(reply, request))
            message, finish = {"role": "assistant", "content": text}, "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        body = envelope(completion_id(), request, "chat.completion", [choice])
        self._send_json(HTTPStatus.OK, {**body, "usage": usage(request, text)})

    def _stream(self, request: dict[str, Any], reply: Echo | Text | Stream | ToolCall) -> None:
        delay = 0.0
        if isinstance(reply, ToolCall):
            call = tool_call(reply)
            arguments = call["function"]["arguments"]
            head = {"index": 0, **call, "function": {"name": reply.name, "arguments": ""}}
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [head]}]
            deltas.extend(
                {"tool_calls": [{"index": 0, "function": {"arguments": arguments[start : start + 16]}}]}
                for start in range(0, len(arguments), 16)
            )
            finish, text = "tool_calls", ""
        else:
            chunks = text_chunks(reply, request)
            deltas = [{"role": "assistant", "content": ""}, *({"content": chunk} for chunk in chunks)]
            finish, text = "stop", "".join(chunks)
            delay = reply.delay_s if isinstance(reply, Stream) else 0.0
        stream_id = completion_id()

        def event(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            return envelope(stream_id, request, "chat.completion.chunk", choices)

        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, delta in enumerate(deltas):
            if index > 1 and delay and not self.server.owner._sleep(delay):
                self.close_connection = True
                return
            self._write_event(event(delta))
        self._write_event(event({}, finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            self._write_event({**event(None), "usage": usage(request, text)})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _write_event(self, payload: dict[str, Any]) -> None:
        self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "scripted_error", "param": None, "code": None}})


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
