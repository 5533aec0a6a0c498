"""What the scripted model server answers: replies, rules and the request helpers tests read them with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
    "content_text",
    "last_user_message",
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
