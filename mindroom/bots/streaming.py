"""Streaming an answer into one Matrix message, edited as text arrives; stops on 🛑 or at shutdown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mindroom import ai
from mindroom.bots.lifecycle import OpenAnswer
from mindroom.bots.reply import ReplyChannel, one_message
from mindroom.bots.runtime import INTERRUPTED_NOTE, LiveState
from mindroom.constants import (
    STREAM_STATUS_CANCELLED,
    STREAM_STATUS_COMPLETED,
    STREAM_STATUS_INTERRUPTED,
    STREAM_STATUS_KEY,
    STREAM_STATUS_STREAMING,
)
from mindroom.hooks.transport import ResponseUsage
from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import STREAM_CURSOR

__all__ = ["Streamed", "spent", "stream_to_matrix"]

logger = get_logger(__name__)

_STREAMING = {STREAM_STATUS_KEY: STREAM_STATUS_STREAMING}
"""The extra content of a streamed answer's first message and of each edit before the final one."""


@dataclass(frozen=True, slots=True)
class Streamed:
    """A generated answer: its full text, the message it is shown in, the note it was stopped with (if so),
    and the tokens the model spent on it (None when the model did not finish it)."""

    text: str
    event_id: str | None
    stop_note: str | None = None
    usage: ResponseUsage | None = None

    @property
    def status(self) -> str:
        """The stream status its final edit carries: completed, or cancelled (a stop) or interrupted (shutdown)."""
        if self.stop_note is None:
            return STREAM_STATUS_COMPLETED
        return STREAM_STATUS_INTERRUPTED if self.stop_note == INTERRUPTED_NOTE else STREAM_STATUS_CANCELLED


def spent(usage: ai.TokenUsage | None, request: ai.GenerationRequest) -> ResponseUsage | None:
    """The model layer's token usage of `request` as hooks and metrics see it (with the model's id)."""
    if usage is None:
        return None
    return ResponseUsage(usage.input_tokens, usage.output_tokens, usage.cached_tokens, request.model.id)


async def stream_to_matrix(
    channel: ReplyChannel,
    live: LiveState,
    request: ai.GenerationRequest,
    answer: OpenAnswer,
    *,
    storage_root: Path,
    env: Mapping[str, str],
    database_url: str | None = None,
    existing_event_id: str | None = None,
) -> Streamed:
    """Stream the answer into one message, edited as text arrives (its journal record is kept in `answer`).

    With `existing_event_id` (a question was edited) the earlier answer is edited instead of a new one sent.

    The model stream is read by a task of its own, so a stop (a 🛑 reaction, or shutdown at the end of
    its grace) ends the answer at once even while the model is silent: the reader is cancelled, which
    closes the model request, and the text so far is kept with a note saying why it ends there.
    """
    entity = channel.entity
    envelope = channel.envelope
    interval = live.config.defaults.edit_interval_s
    text = ""
    event_id: str | None = None
    shown = ""
    last_edit = 0.0
    deltas: asyncio.Queue[str | None] = asyncio.Queue()
    usage: list[ai.TokenUsage] = []
    stream = ai.stream_generate(
        request, storage_root=storage_root, env=env, database_url=database_url, on_usage=usage.append
    )

    async def read() -> None:
        try:
            async for delta in stream:
                deltas.put_nowait(delta)
        finally:
            deltas.put_nowait(None)

    with entity.track_stream() as stream_state:
        reader = asyncio.create_task(read(), name=f"stream-{entity.name}")
        stopped = asyncio.create_task(stream_state.stopped.wait(), name=f"stream-stop-{entity.name}")
        waiting: asyncio.Future[str | None] | None = None
        try:
            while True:
                waiting = asyncio.ensure_future(deltas.get())
                await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():
                    break
                delta = waiting.result()
                if delta is None:
                    await reader  # raises the generation error, if the stream ended with one
                    break
                text += delta
                now = time.monotonic()
                if event_id is None and existing_event_id is not None:
                    event_id = stream_state.event_id = existing_event_id
                    answer.shown_in(event_id)
                    await channel.edit_now(event_id, text + STREAM_CURSOR, _STREAMING)
                    shown, last_edit = text, now
                elif event_id is None:
                    # Recorded before sending, so a crash mid-send still leaves the answer to be marked.
                    answer.begin(channel.txn_id("stream"))
                    # Only what fits in one message: the final edit sends the rest (sent now, it would be twice).
                    event_id = await channel.reply(one_message(text + STREAM_CURSOR), _STREAMING, kind="stream")
                    answer.sent(event_id)
                    stream_state.event_id = event_id
                    shown, last_edit = text, now
                elif now - last_edit >= interval and text != shown:
                    await channel.edit_now(event_id, text + STREAM_CURSOR, _STREAMING)
                    shown, last_edit = text, now
                if stream_state.stop_requested:
                    break
        finally:
            pending = [task for task in (reader, stopped, waiting) if task is not None and not task.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if stream_state.stop_requested:
            logger.info("stream stopped", event_id=envelope.source_event_id, note=stream_state.stop_note)
            text = f"{text}\n\n{stream_state.stop_note}" if text else stream_state.stop_note
            return Streamed(text, event_id, stream_state.stop_note)
    return Streamed(text, event_id, usage=spent(usage[-1], request) if usage else None)
