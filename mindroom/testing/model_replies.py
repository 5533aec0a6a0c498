"""What the scripted model server answers: replies, rules and the request helpers tests read them with."""

from __future__ import annotations

import email.policy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from typing import Any

__all__ = [
    "ContextOverflow",
    "Delay",
    "Echo",
    "Hang",
    "HttpError",
    "Predicate",
    "Reply",
    "Stall",
    "Stream",
    "Text",
    "ToolCall",
    "Transcription",
    "content_text",
    "last_user_message",
    "parse_transcription",
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
    """Answer with this HTTP status and the error body of the API asked (with `Retry-After` when given)."""

    status: int
    message: str = "scripted error"
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """Refuse the request as too long for the model's context window, as the API asked does."""


@dataclass(frozen=True, slots=True)
class Stall:
    """Start a streamed answer, send `chunks`, then go silent (for `seconds`, or until the server stops) and
    drop the connection; a request that is not streamed just gets no answer in that time."""

    chunks: Sequence[str] = ()
    seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))


@dataclass(frozen=True, slots=True)
class Hang:
    """Never answer; the connection is dropped when the server stops (for timeout tests)."""


Reply = Echo | Text | Stream | ToolCall | Delay | HttpError | Hang | Stall | ContextOverflow
Predicate = Callable[[dict[str, Any]], bool]


def last_user_message(request: Mapping[str, Any]) -> str:
    """The text of the last `user` message in a request body ("" when there is none): chat completions,
    Anthropic or Ollama `messages`, or a Responses `input` (a string, or items with roles)."""
    items = request.get("input") if "messages" not in request else request.get("messages")
    if isinstance(items, str):
        return items
    for message in reversed(items or []):
        if isinstance(message, dict) and message.get("role") == "user":
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
    """One request to the scripted `/audio/transcriptions`: which model, which file, its bytes, the other fields
    of the form, and the bearer key it came with."""

    model: str
    filename: str
    audio: bytes
    fields: Mapping[str, str] = field(default_factory=dict)
    api_key: str = ""


def parse_transcription(content_type: str, raw: bytes, authorization: str = "") -> Transcription:
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
    others = {
        key: value.decode(errors="replace")
        for key, value in fields.items()
        if key not in ("model", "file") and isinstance(value, bytes)
    }
    return Transcription(
        model.decode() if isinstance(model, bytes) else "",
        filename,
        fields.get("file") or b"",
        others,
        authorization.removeprefix("Bearer "),
    )
