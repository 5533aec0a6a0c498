"""The OpenAI-compatible wire format: errors, the request, message conversion, session ids, SSE chunks.

Pure functions and values; the routes (`openai_routes`) and the turn (`completions`) use them.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mindroom.errors import MindroomError

__all__ = [
    "ChatCompletionRequest",
    "ChatMessage",
    "Conversation",
    "ErrorType",
    "OpenAIError",
    "completion_body",
    "convert_messages",
    "derive_session_id",
    "error_body",
    "new_completion_id",
    "parse_request",
    "session_namespace",
    "sse_chunk",
]

ErrorType = Literal["invalid_request_error", "server_error", "authentication_error", "rate_limit_error"]
"""The `type` of an error body."""


class OpenAIError(MindroomError):
    """A `/v1` request answered with an error in OpenAI's shape (`error_body`)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: ErrorType = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """The JSON body clients read."""
        return error_body(self.message, self.type, self.param, self.code)


def error_body(
    message: str, type_: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """`{"error": {"message", "type", "param", "code"}}`."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class ChatMessage(BaseModel):
    """One message of the conversation a client sends."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    """`POST /v1/chat/completions`: the fields used; every other OpenAI field is accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(default_factory=list)
    stream: bool = False


def parse_request(raw: bytes) -> ChatCompletionRequest:
    """The request from its body (UTF-8, UTF-16 or UTF-32, with or without a BOM); `OpenAIError` 400 otherwise."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise OpenAIError(400, "Invalid request body") from None
    if not isinstance(data, dict):
        raise OpenAIError(400, "Invalid request body")
    if not data.get("messages"):
        raise OpenAIError(400, "Messages array is required and must not be empty", param="messages")
    try:
        return ChatCompletionRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"]) or None
        raise OpenAIError(400, f"Invalid request body: {param}: {first['msg']}", param=param) from None


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request's messages as one turn: the prompt (system text first), and the exchange before it."""

    prompt: str
    history: tuple[tuple[str, str], ...]
    """(role, text) of the user and assistant messages before the last user message."""


def convert_messages(messages: Sequence[ChatMessage]) -> Conversation:
    """System and developer texts joined; the last user message is the prompt, the ones before it history."""
    system = "\n\n".join(text for m in messages if m.role in ("system", "developer") and (text := _text(m.content)))
    turns = [(m.role, _text(m.content)) for m in messages if m.role in ("user", "assistant")]
    last_user = max((index for index, (role, _) in enumerate(turns) if role == "user"), default=None)
    if last_user is None or not turns[last_user][1].strip():
        raise OpenAIError(400, "No user message content found in messages", param="messages")
    prompt = turns[last_user][1]
    if system:
        prompt = f"{system}\n\n{prompt}"
    return Conversation(prompt, tuple((role, text) for role, text in turns[:last_user] if text.strip()))


def session_namespace(key: str | None) -> str:
    """The session namespace of a key (its SHA-256): two keys never share sessions; `noauth` without keys."""
    return hashlib.sha256(key.encode()).hexdigest() if key else "noauth"


def derive_session_id(
    namespace: str, model: str, headers: Mapping[str, str], requester: str | None = None
) -> tuple[str, bool]:
    """The session a request continues, and whether it is a new one each time (no session header)."""
    prefix = f"requester:{hashlib.sha256(requester.encode()).hexdigest()}:" if requester else ""
    explicit = (headers.get("x-session-id") or "").strip()
    if explicit:
        return f"{prefix}{namespace}:{explicit}", False
    conversation = (headers.get("x-librechat-conversation-id") or "").strip()
    if conversation:
        return f"{prefix}{namespace}:{conversation}:{model}", False
    return f"{prefix}{namespace}:ephemeral:{uuid.uuid4().hex}", True


def new_completion_id() -> str:
    """`chatcmpl-` and 12 hex digits."""
    return f"chatcmpl-{uuid.uuid4().hex[:12]}"


def completion_body(
    completion_id: str, model: str, text: str, usage: tuple[int, int], created: int | None = None
) -> dict[str, Any]:
    """A non-streamed answer; `usage` is (prompt tokens, completion tokens)."""
    prompt_tokens, completion_tokens = usage
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": None,
    }


def sse_chunk(completion_id: str, model: str, created: int, delta: dict[str, str], finish: str | None = None) -> str:
    """One Server-Sent Event of a streamed answer."""
    chunk = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "system_fingerprint": None,
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
