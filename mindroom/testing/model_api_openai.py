"""OpenAI's two APIs as the scripted model server speaks them: Chat Completions and Responses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mindroom.testing.model_api import Answer, StreamPlan, Usage, new_id, now, sse_event
from mindroom.testing.model_replies import content_text

__all__ = ["ChatCompletionsApi", "ResponsesApi"]

_OVERFLOW_MESSAGE = "This model's maximum context length is 128000 tokens. Please reduce the length of the messages."


def _openai_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind if code else "scripted_error", "param": None, "code": code}}


class ChatCompletionsApi:
    """`POST /v1/chat/completions`: `choices` with a message or deltas, `[DONE]` at the end of a stream."""

    name = "chat_completions"
    paths: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")

    def streams(self, request: Mapping[str, Any]) -> bool:
        """`stream: true`."""
        return bool(request.get("stream"))

    def texts(self, request: Mapping[str, Any]) -> list[str]:
        """The content of every message."""
        return [content_text(message.get("content")) for message in request.get("messages") or []]

    def last_user_message(self, request: Mapping[str, Any]) -> str:
        """The content of the last `user` message."""
        for message in reversed(request.get("messages") or []):
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        }

    def _envelope(self, answer_id: str, request: Mapping[str, Any], kind: str, choices: list[Any]) -> dict[str, Any]:
        model = str(request.get("model") or "scripted")
        return {"id": answer_id, "object": kind, "created": now(), "model": model, "choices": choices}

    def _tool_call(self, answer: Answer) -> dict[str, Any]:
        assert answer.tool_call is not None
        function = {"name": answer.tool_call.name, "arguments": answer.arguments()}
        return {"id": answer.call_id("call_"), "type": "function", "function": function}

    def complete(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> dict[str, Any]:
        """A `chat.completion` with one choice."""
        if answer.tool_call is not None:
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [self._tool_call(answer)]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": answer.text}, "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        body = self._envelope(new_id("chatcmpl-"), request, "chat.completion", [choice])
        return {**body, "usage": self._usage(usage)}

    def stream(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> StreamPlan:
        """`chat.completion.chunk` events; the usage chunk only when `stream_options.include_usage` asks."""
        stream_id = new_id("chatcmpl-")

        def event(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            return sse_event({**self._envelope(stream_id, request, "chat.completion.chunk", choices), **extra})

        if answer.tool_call is not None:
            call = self._tool_call(answer)
            arguments = call["function"]["arguments"]
            head = {"index": 0, **call, "function": {"name": answer.tool_call.name, "arguments": ""}}
            first = event({"role": "assistant", "content": None, "tool_calls": [head]})
            pieces = [
                event({"tool_calls": [{"index": 0, "function": {"arguments": arguments[start : start + 16]}}]})
                for start in range(0, len(arguments), 16)
            ]
            finish = "tool_calls"
        else:
            first = event({"role": "assistant", "content": ""})
            pieces = [event({"content": chunk}) for chunk in answer.chunks]
            finish = "stop"
        tail = [event({}, finish)]
        if (request.get("stream_options") or {}).get("include_usage"):
            tail.append(event(None, usage=self._usage(usage)))
        tail.append(b"data: [DONE]\n\n")
        return StreamPlan("text/event-stream", (first,), tuple(pieces), tuple(tail))

    def error(self, status: int, message: str) -> dict[str, Any]:
        """OpenAI's `{"error": {...}}`."""
        return _openai_error(status, message)

    def overflow(self) -> tuple[int, dict[str, Any]]:
        """400 with code `context_length_exceeded`."""
        return 400, _openai_error(400, _OVERFLOW_MESSAGE, "context_length_exceeded")


def _input_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return ""
    if item.get("type") == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output)
    if item.get("type") == "function_call":
        return str(item.get("arguments") or "")
    return content_text(item.get("content"))


class ResponsesApi:
    """`POST /v1/responses`: `output` items (a message or a function call), typed events when streamed."""

    name = "responses"
    paths: tuple[str, ...] = ("/v1/responses", "/responses")

    def streams(self, request: Mapping[str, Any]) -> bool:
        """`stream: true`."""
        return bool(request.get("stream"))

    def _items(self, request: Mapping[str, Any]) -> list[Any]:
        items = request.get("input")
        return [items] if isinstance(items, str) else list(items or [])

    def texts(self, request: Mapping[str, Any]) -> list[str]:
        """The instructions and every input item's text."""
        instructions = request.get("instructions")
        return [*([instructions] if isinstance(instructions, str) else []), *map(_input_text, self._items(request))]

    def last_user_message(self, request: Mapping[str, Any]) -> str:
        """The text of the last input item from the user (a plain string input counts)."""
        for item in reversed(self._items(request)):
            if isinstance(item, str) or (isinstance(item, dict) and item.get("role") == "user"):
                return _input_text(item)
        return ""

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total_tokens,
        }

    def _item(self, answer: Answer, item_id: str, call_id: str, *, done: bool) -> dict[str, Any]:
        status = "completed" if done else "in_progress"
        if answer.tool_call is not None:
            arguments = answer.arguments() if done else ""
            return {"type": "function_call", "id": item_id, "call_id": call_id, "name": answer.tool_call.name,
                    "arguments": arguments, "status": status}  # fmt: skip
        content = [{"type": "output_text", "text": answer.text, "annotations": []}] if done else []
        return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}

    def _response(
        self, request: Mapping[str, Any], response_id: str, output: list[Any], usage: Usage | None
    ) -> dict[str, Any]:
        return {
            "id": response_id, "object": "response", "created_at": now(),
            "status": "completed" if usage is not None else "in_progress",
            "model": str(request.get("model") or "scripted"), "output": output,
            "usage": self._usage(usage) if usage is not None else None,
            "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "parallel_tool_calls": True, "temperature": None, "top_p": None, "tool_choice": "auto", "tools": [],
            "text": {"format": {"type": "text"}},
        }  # fmt: skip

    def complete(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> dict[str, Any]:
        """A completed `response` with one output item."""
        prefix = "fc_" if answer.tool_call is not None else "msg_"
        item = self._item(answer, new_id(prefix), answer.call_id("call_"), done=True)
        return self._response(request, new_id("resp_"), [item], usage)

    def stream(self, request: Mapping[str, Any], answer: Answer, usage: Usage) -> StreamPlan:
        """`response.created`, the item's added events, one delta per piece, then its done events and
        `response.completed` (with the usage)."""
        response_id = new_id("resp_")
        tool = answer.tool_call is not None
        item_id, call_id = new_id("fc_" if tool else "msg_"), answer.call_id("call_")
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return sse_event({"type": kind, "sequence_number": next(sequence), **fields}, kind)

        where = {"item_id": item_id, "output_index": 0}
        head = [
            event("response.created", response=self._response(request, response_id, [], None)),
            event("response.output_item.added", output_index=0, item=self._item(answer, item_id, call_id, done=False)),
        ]
        if tool:
            arguments = answer.arguments()
            chunks = [arguments[start : start + 16] for start in range(0, len(arguments), 16)]
            pieces = [event("response.function_call_arguments.delta", **where, delta=chunk) for chunk in chunks]
            tail = [event("response.function_call_arguments.done", **where, arguments=arguments)]
        else:
            part = {"type": "output_text", "text": "", "annotations": []}
            head.append(event("response.content_part.added", **where, content_index=0, part=part))
            pieces = [
                event("response.output_text.delta", **where, content_index=0, delta=chunk, logprobs=[])
                for chunk in answer.chunks
            ]
            done_part = {**part, "text": answer.text}
            tail = [
                event("response.output_text.done", **where, content_index=0, text=answer.text, logprobs=[]),
                event("response.content_part.done", **where, content_index=0, part=done_part),
            ]
        item = self._item(answer, item_id, call_id, done=True)
        tail.append(event("response.output_item.done", output_index=0, item=item))
        tail.append(event("response.completed", response=self._response(request, response_id, [item], usage)))
        return StreamPlan("text/event-stream", tuple(head), tuple(pieces), tuple(tail))

    def error(self, status: int, message: str) -> dict[str, Any]:
        """OpenAI's `{"error": {...}}`."""
        return _openai_error(status, message)

    def overflow(self) -> tuple[int, dict[str, Any]]:
        """400 with code `context_length_exceeded`."""
        return 400, _openai_error(400, _OVERFLOW_MESSAGE, "context_length_exceeded")
