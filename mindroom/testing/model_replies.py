"""What the scripted model server answers: replies, rules and the request helpers tests read them with."""

from __future__ import annotations

import email.policy
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from typing import Any

__all__ = [
    "Delay",
    "Echo",
    "Hang",
    "HttpError",
    "Predicate",
    "Reply",
    "Stream",
    "Text",
    "ToolCall",
    "Transcription",
    "completion_id",
    "content_text",
    "envelope",
    "last_user_message",
    "parse_transcription",
    "text_chunks",
    "tool_call",
    "usage",
]


@dataclass(frozen=True, slots=True)
class Echo:
    """Reply with the text of the request's last user message, after `prefix`."""

    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Text:
    """Reply with a fixed text."""

    text: str


@dataclass(frozen=True, slots=True)
class Stream:
    """Stream these chunks in order (`delay_s` apart); a non-streaming request gets them joined."""

    chunks: Sequence[str]
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Reply with an assistant message that calls one tool, as OpenAI sends it."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Delay:
    """Wait `seconds`, then answer with `then`."""

    seconds: float
    then: Reply


@dataclass(frozen=True, slots=True)
class HttpError:
    """Answer with this HTTP status and an OpenAI-shaped error body."""

    status: int
    message: str = "scripted error"


@dataclass(frozen=True, slots=True)
class Hang:
    """Never answer; the connection is dropped when the server stops (for timeout tests)."""


Reply = Echo | Text | Stream | ToolCall | Delay | HttpError | Hang
Predicate = Callable[[dict[str, Any]], bool]


def last_user_message(request: Mapping[str, Any]) -> str:
    """The text of the last `user` message in a chat-completions request body ("" when there is none)."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def content_text(content: Any) -> str:
    """The text of a message's `content`: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass(frozen=True, slots=True)
class Transcription:
    """One request to the scripted `/audio/transcriptions`: which model, which file, and its bytes."""

    model: str
    filename: str
    audio: bytes


def parse_transcription(content_type: str, raw: bytes) -> Transcription:
    """Read the multipart form an OpenAI client sends to `/audio/transcriptions`."""
    message = BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    fields: dict[str, Any] = {}
    filename = ""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if part.get_filename():
            filename = part.get_filename() or ""
        fields[str(name)] = part.get_payload(decode=True)
    model = fields.get("model", b"")
    return Transcription(model.decode() if isinstance(model, bytes) else "", filename, fields.get("file") or b"")


def completion_id() -> str:
    """A fresh chat-completion id."""
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def envelope(completion_id: str, request: dict[str, Any], kind: str, choices: list[Any]) -> dict[str, Any]:
    """The common fields of a chat-completion answer around `choices`."""
    model = str(request.get("model") or "scripted")
    return {"id": completion_id, "object": kind, "created": int(time.time()), "model": model, "choices": choices}


def text_chunks(reply: Echo | Text | Stream, request: dict[str, Any]) -> Sequence[str]:
    """The text pieces a reply answers with."""
    if isinstance(reply, Stream):
        return reply.chunks
    if isinstance(reply, Text):
        return (reply.text,)
    return (reply.prefix + last_user_message(request),)


def tool_call(reply: ToolCall) -> dict[str, Any]:
    """The `tool_calls` entry of a scripted tool call."""
    return {
        "id": reply.call_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": reply.name, "arguments": json.dumps(dict(reply.arguments))},
    }


def usage(request: dict[str, Any], text: str) -> dict[str, int]:
    """Token counts for an answer (approximate: whitespace-separated words)."""
    prompt = sum(len(content_text(message.get("content")).split()) for message in request.get("messages") or [])
    completion = len(text.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
