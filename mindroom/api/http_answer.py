"""`HttpAnswer`: the answer channel of a `/v1` turn (`mindroom.bots.channel.AnswerChannel`).

The answer stages run unchanged; what they deliver goes into this channel's queue of events, which the
route turns into one JSON body or a stream of Server-Sent Events:

- `("delta", text)`: more of the answer (streaming only);
- `("error", message)`: the turn failed (a model error, a missing model);
- `("end", "")`: the answer is complete (or was withdrawn by a hook: then nothing was delivered).

Nothing is shown while the model works, no approval card can be posted (gates that would ask deny), and
the answer is not recorded among the Matrix answers.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from typing import Any

from mindroom import ai
from mindroom.bots.channel import GenerationSetup
from mindroom.bots.streaming import Streamed, spent

__all__ = ["EMPTY_RESPONSE", "HttpAnswer"]

EMPTY_RESPONSE = "(empty response)"
"""What the answer stages deliver for a blank answer (an HTTP client gets an error instead)."""


class HttpAnswer:
    """One `/v1` answer: the events the route reads, the final text, and the turn's token usage."""

    def __init__(self, completion_id: str, *, stream: bool) -> None:
        self.completion_id = completion_id
        self.stream = stream
        self.events: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.text = ""
        self.usage = ai.TokenUsage()
        self.delivered = False
        self._streamed = ""
        self._ended = False
        self._usage_told = False

    @property
    def in_room(self) -> bool:
        """Never: the answer is an HTTP response."""
        return False

    def working(self) -> AbstractAsyncContextManager[None]:
        """Nothing to show while the model works."""
        return contextlib.nullcontext()

    def _usage(self, usage: ai.TokenUsage) -> None:
        self.usage = usage
        self._usage_told = True

    def _emit(self, kind: str, text: str = "") -> None:
        if self._ended:
            return
        self._ended = kind != "delta"
        self.events.put_nowait((kind, text))

    async def generate(self, request: ai.GenerationRequest, setup: GenerationSetup) -> Streamed:
        """Streamed as deltas when the client asked for a stream, else generated whole (stored after the reply)."""
        if not self.stream:
            early = await ai.generate_early(
                request, storage_root=setup.storage_root, env=setup.env, database_url=setup.database_url
            )
            setup.after_reply.push_async_callback(early.stored)
            self.usage = early.usage
            return Streamed(early.text, None, usage=spent(early.usage, request))
        stream = ai.stream_generate(
            request,
            storage_root=setup.storage_root,
            env=setup.env,
            database_url=setup.database_url,
            on_usage=self._usage,
        )
        async with contextlib.aclosing(stream):
            async for delta in stream:
                self._streamed += delta
                self._emit("delta", delta)
        event_id = self.completion_id if self._streamed else None
        return Streamed(self._streamed, event_id, usage=spent(self.usage, request) if self._usage_told else None)

    async def reply(self, text: str, extra: dict[str, Any] | None = None) -> str:
        """The whole answer (for a stream that showed nothing yet, as one chunk)."""
        if text == EMPTY_RESPONSE and not self._streamed:
            self._emit("error", "Agent returned empty response")
            return self.completion_id
        self.text, self.delivered = text, True
        if self.stream:
            self._emit("delta", text)
        self._emit("end")
        return self.completion_id

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """The streamed answer's final text; what a hook appended is streamed too (a stream cannot be rewritten)."""
        self.text, self.delivered = text, True
        if text.startswith(self._streamed) and len(text) > len(self._streamed):
            self._emit("delta", text[len(self._streamed) :])
        self._emit("end")
        return event_id

    async def error(self, message: str, *, edit_event_id: str | None = None) -> None:
        """The turn failed: the client gets an error (or, mid-stream, the failure as the last text)."""
        self._emit("error", message)

    async def redact(self, event_id: str, reason: str) -> None:
        """A hook withdrew the streamed answer: the stream ends where it is."""
        self._emit("end")

    def finish(self) -> None:
        """The turn is over: end the events if nothing did (a hook suppressed the answer, or it failed)."""
        self._emit("end")
