"""Anthropic's Messages API as the scripted model server speaks it (`POST /v1/messages`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mindroom.testing.model_api import Answer, StreamPlan, Usage, new_id, sse_event

__all__ = ["AnthropicMessagesApi"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "tool_use":
        return json.dumps(block.get("input") or {})
    if kind == "tool_result":
        return _content_text(block.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(_block_text(block) for block in content)
    return _block_text(content)


class AnthropicMessagesApi:
    """Content blocks (`text` or `tool_use`), `stop_reason`, and the typed events of a stream."""

    name = "anthropic"
    paths: tuple[str, ...] = ("/v1/messages",)

    def streams(self, request: Mapping[str, Any]) -> bool:
        """`stream: true`."""
        return bool(request.get("stream"))

    def texts(self, request: Mapping[str, Any]) -> list[str]:
        """The system prompt and every message's text, tool inputs and tool results."""
        messages = [_content_text(message.get("content")) for message in request.get("messages") or []]
        return [_content_text(request.get("system")), *messages]

    def last_user_message(self, request: Mapping[str, Any]) -> str:
        """The text blocks of the last user message that has any (tool results are not the user's words)."""
        for message in reversed(request.get("messages") or []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            blocks = content if isinstance(content, list) else [content]
            text = "".join(
                block if isinstance(block, str) else str(block.get("text") or "")
                for block in blocks
                if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
            )
            if text:
                return text
        return ""

    def _usage(self, usage: Usage, *, output: int | None = None) -> dict[str, int]:
        # Anthropic counts cached input apart from `input_tokens`.
        return {
            "input_tokens": usage.input_tokens - usage.cached_tokens,
            "output_tokens": usage.output_tokens if output is None else output,
            "cache_read_input_tokens": usage.cached_tokens,
            "cache_creation_input_tokens": 0,
        }

    def _block(self, answer: Answer, call_id: str) -> dict[str, Any]:
        if answer.tool_call is not None:
            return {"type": "tool_use", "id": call_id, "name": answer.tool_call.name,
                    "input": dict(answer.tool_call.arguments)}  # fmt: skip
        return {"type": "text", "text": answer.text}

    def _message(self, request: Mapping[str, Any], content: list[Any], stop: str | None, usage: dict[str, int]) -> Any:
        return {
            "id": new_id("msg_"), "type": "message", "role": "assistant",
            "model": str(request.get("model") or "scripted"), "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage,
        }  # fmt: skip

    def _stop(self, answer: Answer) -> str:
        return "tool_use" if answer.tool_call is not None else "end_turn"

    def complete(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> dict[str, Any]:
        """A `message` with one content block."""
        block = self._block(answer, answer.call_id("toolu_"))
        result: dict[str, Any] = self._message(request, [block], self._stop(answer), self._usage(usage))
        return result

    def stream(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> StreamPlan:
        """`message_start`, one content block (started, a delta per piece, stopped), `message_delta` with the
        stop reason and output tokens, `message_stop`."""

        def event(kind: str, **fields: Any) -> bytes:
            return sse_event({"type": kind, **fields}, kind)

        call_id = answer.call_id("toolu_")
        start = self._message(request, [], None, self._usage(usage, output=1))
        if answer.tool_call is not None:
            block = {"type": "tool_use", "id": call_id, "name": answer.tool_call.name, "input": {}}
            arguments = answer.arguments()
            deltas = [
                {"type": "input_json_delta", "partial_json": arguments[offset : offset + 16]}
                for offset in range(0, len(arguments), 16)
            ]
        else:
            block = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": chunk} for chunk in answer.chunks]
        head = (
            event("message_start", message=start),
            event("content_block_start", index=0, content_block=block),
            event("ping"),
        )
        pieces = tuple(event("content_block_delta", index=0, delta=delta) for delta in deltas)
        tail = (
            event("content_block_stop", index=0),
            event(
                "message_delta",
                delta={"stop_reason": self._stop(answer), "stop_sequence": None},
                usage={"output_tokens": usage.output_tokens},
            ),
            event("message_stop"),
        )
        return StreamPlan("text/event-stream", head, pieces, tail)

    def error(self, status: int, message: str) -> dict[str, Any]:
        """Anthropic's `{"type": "error", "error": {"type": ..., "message": ...}}`."""
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def overflow(self) -> tuple[int, dict[str, Any]]:
        """400: "prompt is too long"."""
        return 400, self.error(400, "prompt is too long: 210000 tokens > 200000 maximum")
