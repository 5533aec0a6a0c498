"""`MatrixAnswer`: the answer channel of a Matrix turn (`mindroom.bots.channel.AnswerChannel`).

It puts together what a Matrix answer is made of: the thread's `ReplyChannel` (sends, edits, errors),
its typing notice, and the answer streamed into one message (`stream_to_matrix`) or generated whole.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from mindroom import ai
from mindroom.bots.channel import GenerationSetup
from mindroom.bots.formatting import with_stream_status
from mindroom.bots.reply import ReplyChannel, typing_notice
from mindroom.bots.streaming import Streamed, spent, stream_to_matrix
from mindroom.constants import STREAM_STATUS_COMPLETED, STREAM_STATUS_ERROR, STREAM_STATUS_KEY

__all__ = ["MatrixAnswer"]


class MatrixAnswer:
    """One entity's answer in the Matrix thread (or room) of one message."""

    __slots__ = ("channel", "ending")

    def __init__(self, channel: ReplyChannel) -> None:
        self.channel = channel
        self.ending = STREAM_STATUS_COMPLETED
        """The stream status of the final edit: completed, or how a stop cut the streamed answer short."""

    @property
    def in_room(self) -> bool:
        """Always: the answer is a Matrix message."""
        return True

    def working(self) -> AbstractAsyncContextManager[None]:
        """A typing notice while the model works."""
        return typing_notice(self.channel)

    async def generate(self, request: ai.GenerationRequest, setup: GenerationSetup) -> Streamed:
        """Streamed into one message edited as text arrives (when the agent streams), else generated whole.

        A whole answer is returned as soon as its text is final; the turn is stored after the reply.
        """
        if setup.streaming:
            streamed = await stream_to_matrix(
                self.channel,
                setup.live,
                request,
                setup.answer,
                storage_root=setup.storage_root,
                env=setup.env,
                database_url=setup.database_url,
                existing_event_id=setup.existing_event_id,
            )
            self.ending = streamed.status
            return streamed
        early = await ai.generate_early(
            request, storage_root=setup.storage_root, env=setup.env, database_url=setup.database_url
        )
        setup.after_reply.push_async_callback(early.stored)
        return Streamed(early.text, None, usage=spent(early.usage, request))

    async def reply(self, text: str, extra: dict[str, Any] | None = None) -> str:
        """A reply in the thread (more messages if it is long), final as sent."""
        return await self.channel.reply(text, with_stream_status(extra, STREAM_STATUS_COMPLETED))

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """The final edit of the streamed message (or of the earlier answer to an edited question)."""
        return await self.channel.edit(event_id, text, with_stream_status(extra, self.ending))

    async def error(self, message: str, *, edit_event_id: str | None = None) -> None:
        """`⚠️ message`, in place of the streamed message when there is one."""
        await self.channel.error(message, edit_event_id=edit_event_id, extra={STREAM_STATUS_KEY: STREAM_STATUS_ERROR})

    async def redact(self, event_id: str, reason: str) -> None:
        """Remove the streamed message."""
        await self.channel.redact(event_id, reason)
