"""`ReplyChannel`: how one entity answers one message (reply, edit, error), bound once per turn.

Every send waits out homeserver outages and has a transaction id derived from the entity, the message
and the kind of send, so a turn replayed after a crash gets back the message it already posted. Text
is sent with its Markdown rendered as HTML (when the agent writes Markdown), and an answer longer than
one Matrix event holds continues in further messages of the same thread. With a `fence`, nothing is sent
or edited while it is False (`StateFencedError` instead): the daemon cannot show it still holds the state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from mindroom.bots.formatting import MAX_BODY_BYTES, split_message, to_html
from mindroom.bots.runtime import Entity
from mindroom.constants import HOPS_KEY, STREAM_STATUS_KEY
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id
from mindroom.state.errors import StateFencedError

__all__ = [
    "CONTINUED_NOTE",
    "TYPING_DELAY_S",
    "TYPING_RENEW_S",
    "ReplyChannel",
    "SendKind",
    "one_message",
    "typing_notice",
]

logger = get_logger(__name__)

SendKind = Literal["reply", "stream", "error"]
CONTINUED_NOTE = " …"
"""Ends a streaming preview that is longer than one message; the final answer continues below it."""
TYPING_RENEW_S = 20.0
"""A typing notice lasts 30 s; it is renewed before that while the model is still working."""
TYPING_DELAY_S = 0.3
"""How long the model works before the typing notice is shown."""


def one_message(text: str) -> str:
    """What of `text` one message shows while an answer streams: all of it, or its first part and `CONTINUED_NOTE`
    (the final edit sends the rest as more messages)."""
    if len(text.encode()) <= MAX_BODY_BYTES:
        return text
    limit = MAX_BODY_BYTES - len(CONTINUED_NOTE.encode())  # the note fits beside the part
    return split_message(text[:limit], limit)[0] + CONTINUED_NOTE  # a head of `limit` characters holds the part


class ReplyChannel:
    """The thread (or, in room mode, the room) of one inbound message, as one entity answers in it."""

    def __init__(
        self,
        entity: Entity,
        envelope: MessageEnvelope,
        *,
        hops: int = 1,
        markdown: bool = True,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self.entity = entity
        self.envelope = envelope
        self.hops = hops
        self.markdown = markdown
        self.fence = fence

    def _fenced(self, what: str) -> None:
        """Refuse to send while the fence says this daemon may not (a standby may be answering instead)."""
        if self.fence is not None and not self.fence():
            logger.warning("not sending: this daemon cannot show it still holds the state lock", what=what)
            raise StateFencedError(f"not sending the {what}: this daemon cannot show it still holds the state lock")

    def _content(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        """`extra`, marked with the answer's hop count so another bot can tell how deep a bot chain is."""
        return {**(extra or {}), HOPS_KEY: self.hops}

    def _html(self, text: str) -> str | None:
        return to_html(text) if self.markdown else None

    def txn_id(self, kind: str) -> str:
        """The transaction id of this entity's `kind` send for this message (the same after a restart)."""
        return stable_txn_id(self.entity.name, self.envelope.source_event_id, kind)

    async def reply(self, text: str, extra: dict[str, Any] | None = None, kind: SendKind = "reply") -> str:
        """Post `text` as the answer to the message (more messages if it is long); returns the first one's id."""
        first, *rest = split_message(text)
        event_id = await self._send(first, extra, kind, reply=True)
        await self._continue(rest, kind, extra)
        return event_id

    async def _send(self, text: str, extra: dict[str, Any] | None, kind: str, *, reply: bool) -> str:
        self._fenced(kind)
        envelope = self.envelope
        client = self.entity.client
        content = self._content(extra)
        html = self._html(text)
        return await send_until_accepted(
            lambda txn_id: client.send_message(
                envelope.room_id,
                text,
                thread_root=envelope.resolved_thread_id,
                reply_to=envelope.source_event_id if reply else None,
                formatted_body=html,
                extra_content=content,
                txn_id=txn_id,
            ),
            kind,
            self.txn_id(kind),
        )

    async def _continue(self, parts: list[str], kind: str, extra: dict[str, Any] | None) -> None:
        """The messages after the first of a long text; each carries the first one's stream status (so the
        agent's newest message says how its answer stands), nothing else of its extra content."""
        status = (extra or {}).get(STREAM_STATUS_KEY)
        carried = {STREAM_STATUS_KEY: status} if status is not None else None
        for index, part in enumerate(parts, start=2):
            await self._send(part, carried, f"{kind}-part-{index}", reply=False)

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """Replace the text of this entity's message `event_id` (waiting out outages); a long text continues
        in new messages after it."""
        self._fenced("edit")
        envelope = self.envelope
        client = self.entity.client
        first, *rest = split_message(text)
        html = self._html(first)
        edited = await send_until_accepted(
            lambda txn_id: client.edit_message(
                envelope.room_id,
                event_id,
                first,
                thread_root=envelope.resolved_thread_id,
                formatted_body=html,
                extra_content=extra,
                txn_id=txn_id,
            ),
            "edit",
        )
        await self._continue(rest, "edit", extra)
        return edited

    async def edit_now(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> None:
        """One edit, not retried (a streaming update: the next one or the final edit carries the text).

        Only what fits in one message is shown while streaming; the final edit sends the rest.
        """
        self._fenced("streaming edit")
        envelope = self.envelope
        shown = one_message(text)
        await self.entity.client.edit_message(
            envelope.room_id,
            event_id,
            shown,
            thread_root=envelope.resolved_thread_id,
            formatted_body=self._html(shown),
            extra_content=extra,
        )

    async def error(
        self, message: str, *, edit_event_id: str | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        """Answer with `⚠️ message`, in place of a streamed answer when there is one."""
        text = f"⚠️ {message}"
        logger.warning("answered with an error", event_id=self.envelope.source_event_id, problem=message)
        if edit_event_id is not None:
            await self.edit(edit_event_id, text, extra)
        else:
            await self.reply(text, extra, kind="error")

    async def redact(self, event_id: str, reason: str) -> None:
        """Remove this entity's message `event_id` from the thread."""
        await self.entity.client.redact(self.envelope.room_id, event_id, reason=reason)

    async def typing(self, on: bool) -> None:
        """Show (or stop showing) that this entity is writing, as Element shows it under the timeline."""
        try:
            await self.entity.client.set_typing(self.envelope.room_id, on)
        except Exception as exc:  # a typing notice is decoration: never let it fail the answer
            logger.debug("typing notice failed", agent=self.entity.name, error=str(exc))


@contextlib.asynccontextmanager
async def typing_notice(channel: ReplyChannel) -> AsyncIterator[None]:
    """A typing notice while the model works, renewed before it lapses, cleared at the end.

    It starts after `TYPING_DELAY_S`: an answer ready sooner would only flash the notice, and costs two
    requests to the homeserver fewer.
    """
    shown = False

    async def renew() -> None:
        nonlocal shown
        await asyncio.sleep(TYPING_DELAY_S)
        while True:
            shown = True
            await channel.typing(True)
            await asyncio.sleep(TYPING_RENEW_S)

    task = asyncio.create_task(renew(), name=f"typing-{channel.entity.name}")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if shown:
            await channel.typing(False)
