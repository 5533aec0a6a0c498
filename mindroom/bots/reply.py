"""`ReplyChannel`: how one entity answers one message (reply, edit, error), bound once per turn.

Every send waits out homeserver outages and has a transaction id derived from the entity, the message
and the kind of send, so a turn replayed after a crash gets back the message it already posted.
"""

from __future__ import annotations

from typing import Any, Literal

from mindroom.bots.runtime import Entity
from mindroom.constants import HOPS_KEY
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id

__all__ = ["ReplyChannel", "SendKind"]

logger = get_logger(__name__)

SendKind = Literal["reply", "stream", "error"]


class ReplyChannel:
    """The thread of one inbound message, as one entity answers in it."""

    def __init__(self, entity: Entity, envelope: MessageEnvelope, *, hops: int = 1) -> None:
        self.entity = entity
        self.envelope = envelope
        self.hops = hops

    def _content(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        """`extra`, marked with the answer's hop count so another bot can tell how deep a bot chain is."""
        return {**(extra or {}), HOPS_KEY: self.hops}

    def txn_id(self, kind: SendKind) -> str:
        """The transaction id of this entity's `kind` send for this message (the same after a restart)."""
        return stable_txn_id(self.entity.name, self.envelope.source_event_id, kind)

    async def reply(self, text: str, extra: dict[str, Any] | None = None, kind: SendKind = "reply") -> str:
        """Post `text` in the thread, as a reply to the message; returns the new event's id."""
        envelope = self.envelope
        client = self.entity.client
        content = self._content(extra)
        return await send_until_accepted(
            lambda txn_id: client.send_message(
                envelope.room_id,
                text,
                thread_root=envelope.resolved_thread_id,
                reply_to=envelope.source_event_id,
                extra_content=content,
                txn_id=txn_id,
            ),
            kind,
            self.txn_id(kind),
        )

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """Replace the text of this entity's message `event_id` (waiting out outages)."""
        envelope = self.envelope
        client = self.entity.client
        return await send_until_accepted(
            lambda txn_id: client.edit_message(
                envelope.room_id,
                event_id,
                text,
                thread_root=envelope.resolved_thread_id,
                extra_content=extra,
                txn_id=txn_id,
            ),
            "edit",
        )

    async def edit_now(self, event_id: str, text: str) -> None:
        """One edit, not retried (a streaming update: the next one or the final edit carries the text)."""
        envelope = self.envelope
        await self.entity.client.edit_message(envelope.room_id, event_id, text, thread_root=envelope.resolved_thread_id)

    async def error(self, message: str, *, edit_event_id: str | None = None) -> None:
        """Answer with `⚠️ message`, in place of a streamed answer when there is one."""
        text = f"⚠️ {message}"
        logger.warning("answered with an error", event_id=self.envelope.source_event_id, problem=message)
        if edit_event_id is not None:
            await self.edit(edit_event_id, text)
            self.entity.runtime.journal.end_answer(edit_event_id)
        else:
            await self.reply(text, None, kind="error")

    async def redact(self, event_id: str, reason: str) -> None:
        """Remove this entity's message `event_id` from the thread."""
        await self.entity.client.redact(self.envelope.room_id, event_id, reason=reason)
