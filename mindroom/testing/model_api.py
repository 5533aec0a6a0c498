"""What every wire protocol of the scripted model server shares: the answer to render, token counts, and the
shape of a streamed answer. Each provider's API renders these its own way (`model_api_openai`,
`model_api_anthropic`, `model_api_ollama`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mindroom.testing.model_replies import ToolCall

__all__ = ["Answer", "ModelApi", "StreamPlan", "Usage", "new_id", "now", "sse_event", "word_count"]


def word_count(texts: Sequence[str]) -> int:
    """Tokens, as the scripted server counts them: whitespace-separated words."""
    return sum(len(text.split()) for text in texts)


def new_id(prefix: str) -> str:
    """A fresh id with the provider's prefix (`chatcmpl-`, `resp_`, `msg_`, ...)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def now() -> int:
    """The current Unix time in whole seconds."""
    return int(time.time())


def sse_event(payload: Mapping[str, Any], event: str | None = None) -> bytes:
    """One server-sent event: an optional `event:` line, then the JSON `data:` line."""
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(payload) + "\n\n").encode()


@dataclass(frozen=True, slots=True)
class Usage:
    """The token counts the server reports for one answer (`cached_tokens` of the input came from a cache)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input and output together."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Answer:
    """What a reply answers with, whatever the protocol: text in chunks, or one tool call."""

    chunks: tuple[str, ...] = ()
    tool_call: ToolCall | None = None
    delay_s: float = 0.0

    @property
    def text(self) -> str:
        """The whole text of the answer."""
        return "".join(self.chunks)

    def arguments(self) -> str:
        """The tool call's arguments as JSON text ("" without a tool call)."""
        return json.dumps(dict(self.tool_call.arguments)) if self.tool_call is not None else ""

    def call_id(self, prefix: str) -> str:
        """The tool call's id: the scripted one, else a fresh one with `prefix`."""
        return (self.tool_call.call_id if self.tool_call is not None else None) or new_id(prefix)


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """A streamed answer: `head`, then one frame per piece (`Answer.delay_s` apart), then `tail`."""

    content_type: str
    head: tuple[bytes, ...]
    pieces: tuple[bytes, ...]
    tail: tuple[bytes, ...]


class ModelApi(Protocol):
    """One provider's wire protocol, as the scripted server speaks it."""

    name: str
    paths: tuple[str, ...]

    def streams(self, request: Mapping[str, Any]) -> bool:
        """Whether the request asks for a streamed answer."""

    def texts(self, request: Mapping[str, Any]) -> list[str]:
        """Every text the request sends the model (for token counts)."""

    def last_user_message(self, request: Mapping[str, Any]) -> str:
        """The text of the request's last user message ("" when there is none)."""

    def complete(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> dict[str, Any]:
        """The body of a non-streamed answer."""

    def stream(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> StreamPlan:
        """The frames of a streamed answer."""

    def error(self, status: int, message: str) -> dict[str, Any]:
        """The body of an error answer."""

    def overflow(self) -> tuple[int, dict[str, Any]]:
        """The status and body with which the provider refuses a prompt longer than its context window."""
