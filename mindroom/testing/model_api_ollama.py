"""Ollama's native chat API as the scripted model server speaks it (`POST /api/chat`, streamed as JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from mindroom.testing.model_api import Answer, StreamPlan, Usage
from mindroom.testing.model_replies import content_text

__all__ = ["OllamaChatApi"]


def _line(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload).encode() + b"\n"


class OllamaChatApi:
    """`message` objects, `done` on the last line, and `prompt_eval_count`/`eval_count` for tokens."""

    name = "ollama"
    paths: tuple[str, ...] = ("/api/chat",)

    def streams(self, request: Mapping[str, Any]) -> bool:
        """Ollama streams unless the request says `stream: false`."""
        return request.get("stream") is not False

    def texts(self, request: Mapping[str, Any]) -> list[str]:
        """Every message's content and tool-call arguments."""
        texts = []
        for message in request.get("messages") or []:
            texts.append(content_text(message.get("content")))
            texts.extend(
                json.dumps(call.get("function", {}).get("arguments")) for call in message.get("tool_calls") or []
            )
        return texts

    def last_user_message(self, request: Mapping[str, Any]) -> str:
        """The content of the last `user` message."""
        for message in reversed(request.get("messages") or []):
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""

    def _base(self, request: Mapping[str, Any]) -> dict[str, Any]:
        created = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        return {"model": str(request.get("model") or "scripted"), "created_at": created}

    def _done(self, request: Mapping[str, Any], message: dict[str, Any], usage: Usage) -> dict[str, Any]:
        return {
            **self._base(request), "message": message, "done": True, "done_reason": "stop",
            "total_duration": 1_000_000, "load_duration": 0, "prompt_eval_count": usage.input_tokens,
            "prompt_eval_duration": 0, "eval_count": usage.output_tokens, "eval_duration": 1_000_000,
        }  # fmt: skip

    def _tool_message(self, answer: Answer) -> dict[str, Any]:
        assert answer.tool_call is not None
        call = {"function": {"name": answer.tool_call.name, "arguments": dict(answer.tool_call.arguments)}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    def complete(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> dict[str, Any]:
        """The final line, holding the whole message."""
        if answer.tool_call is not None:
            return self._done(request, self._tool_message(answer), usage)
        return self._done(request, {"role": "assistant", "content": answer.text}, usage)

    def stream(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> StreamPlan:
        """One line per chunk (a tool call comes whole, in one line), then the `done` line with the counts."""
        pieces: tuple[bytes, ...]
        if answer.tool_call is not None:
            pieces = (_line({**self._base(request), "message": self._tool_message(answer), "done": False}),)
        else:
            pieces = tuple(
                _line({**self._base(request), "message": {"role": "assistant", "content": chunk}, "done": False})
                for chunk in answer.chunks
            )
        tail = (_line(self._done(request, {"role": "assistant", "content": ""}, usage)),)
        return StreamPlan("application/x-ndjson", (), pieces, tail)

    def error(self, status: int, message: str) -> dict[str, Any]:
        """Ollama's `{"error": "..."}`."""
        return {"error": message}

    def overflow(self) -> tuple[int, dict[str, Any]]:
        """400: the input is longer than the model's context."""
        return 400, {"error": "input too long: the prompt exceeds the model's context window"}
