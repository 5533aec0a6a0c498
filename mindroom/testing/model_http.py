"""The scripted model server's HTTP side: routing each request to the API it speaks, and writing the answer."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.testing.model_api import Answer, ModelApi, StreamPlan
from mindroom.testing.model_api_anthropic import AnthropicMessagesApi
from mindroom.testing.model_api_ollama import OllamaChatApi
from mindroom.testing.model_api_openai import ChatCompletionsApi, ResponsesApi
from mindroom.testing.model_embeddings import embeddings_reply
from mindroom.testing.model_replies import ContextOverflow, Delay, Echo, Hang, HttpError, Stall, Stream, Text, ToolCall

__all__ = ["ModelHttpServer", "ModelRequestHandler"]

logger = get_logger(__name__)

_APIS: dict[str, ModelApi] = {
    path: api
    for api in (ChatCompletionsApi(), ResponsesApi(), AnthropicMessagesApi(), OllamaChatApi())
    for path in api.paths
}


class ModelHttpServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its `ScriptedModelServer` and can drop its open connections."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: Any):
        # `owner` is the `ScriptedModelServer` (not imported: that module imports this one)
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


class ModelRequestHandler(BaseHTTPRequestHandler):
    """One request: the API its path names answers it from the owner's script."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ModelHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log of `http.server`."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        names = self.server.owner._known_models()
        if path == "/api/tags":
            self._send_json(HTTPStatus.OK, {"models": [{"name": name, "model": name} for name in names]})
            return
        if path not in ("/v1/models", "/models"):
            self._send_error(HTTPStatus.NOT_FOUND, f"no route for GET {self.path}")
            return
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "scripted"} for name in names]
        self._send_json(HTTPStatus.OK, {"object": "list", "data": data})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/audio/transcriptions", "/audio/transcriptions"):
            text = self.server.owner._transcribe(
                self.headers.get("Content-Type", ""), raw, self.headers.get("Authorization", "")
            )
            self._send_json(HTTPStatus.OK, {"text": text})
            return
        if path in ("/v1/audio/speech", "/audio/speech"):
            self._send_bytes(*self.server.owner.speech.answer(raw, self.headers.get("Authorization", "")))
            return
        if path in ("/v1/embeddings", "/embeddings"):
            self._send_json(*embeddings_reply(raw))
            return
        api = _APIS.get(path)
        if api is None:
            self._send_error(HTTPStatus.NOT_FOUND, f"no route for POST {self.path}")
            return
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._send_json(HTTPStatus.BAD_REQUEST, api.error(HTTPStatus.BAD_REQUEST, "body must be a JSON object"))
            return
        owner = self.server.owner
        reply = owner._record(api.name, request)
        while isinstance(reply, Delay):
            if not owner._sleep(reply.seconds):
                self.close_connection = True
                return
            reply = reply.then
        if isinstance(reply, Hang):
            owner._stopping.wait()
            self.close_connection = True
        elif isinstance(reply, HttpError):
            headers = {} if reply.retry_after_s is None else {"Retry-After": f"{reply.retry_after_s:g}"}
            self._send_json(reply.status, api.error(reply.status, reply.message), headers)
        elif isinstance(reply, ContextOverflow):
            self._send_json(*api.overflow())
        elif isinstance(reply, Stall):
            self._stall(api, request, reply)
        else:
            answer = _answer(api, request, reply)
            usage = owner._usage(api, request, answer)
            if api.streams(request):
                self._stream(api.stream(request, answer, usage), answer.delay_s)
            else:
                self._send_json(HTTPStatus.OK, api.complete(request, answer, usage))

    def _stall(self, api: ModelApi, request: dict[str, Any], stall: Stall) -> None:
        """Start the stream and send `stall.chunks`, then go silent and drop the connection."""
        owner = self.server.owner
        if api.streams(request):
            answer = Answer(chunks=tuple(stall.chunks))
            plan = api.stream(request, answer, owner._usage(api, request, answer))
            self._start_stream(plan.content_type)
            for frame in (*plan.head, *plan.pieces):
                self._write_chunk(frame)
        if stall.seconds is None:
            owner._stopping.wait()
        else:
            owner._sleep(stall.seconds)
        self.close_connection = True

    def _start_stream(self, content_type: str) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _stream(self, plan: StreamPlan, delay: float) -> None:
        self._start_stream(plan.content_type)
        for frame in plan.head:
            self._write_chunk(frame)
        for index, frame in enumerate(plan.pieces):
            if index and delay and not self.server.owner._sleep(delay):
                self.close_connection = True
                return
            self._write_chunk(frame)
        for frame in plan.tail:
            self._write_chunk(frame)
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_bytes(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "scripted_error", "param": None, "code": None}})


def _answer(api: ModelApi, request: dict[str, Any], reply: Echo | Text | Stream | ToolCall) -> Answer:
    if isinstance(reply, ToolCall):
        return Answer(tool_call=reply)
    if isinstance(reply, Stream):
        return Answer(tuple(reply.chunks), delay_s=reply.delay_s)
    if isinstance(reply, Text):
        return Answer((reply.text,))
    return Answer((reply.prefix + api.last_user_message(request),))
