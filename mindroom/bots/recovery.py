"""After a crash: mark streamed answers that never finished, then finish the turns that never completed
(and deliver again the membership events whose hooks had not returned), through the handlers the
orchestrator gave the bot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from mindroom.bots.runtime import Entity, EventHandler
from mindroom.constants import STREAM_STATUS_INTERRUPTED, STREAM_STATUS_KEY
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent, MatrixEventKind
from mindroom.state.journal import TurnJournal

__all__ = ["INTERRUPTED_TEXT", "recover_interrupted"]

logger = get_logger(__name__)

INTERRUPTED_TEXT = "(This answer was interrupted when the service restarted. Please ask again.)"
_INTERRUPTED = {STREAM_STATUS_KEY: STREAM_STATUS_INTERRUPTED}


async def recover_interrupted(
    entity: Entity, journal: TurnJournal, handlers: Mapping[MatrixEventKind, EventHandler]
) -> None:
    """Mark this entity's unfinished streamed answers as interrupted, then replay its unfinished turns."""
    interrupted: set[str] = set()
    for answer in journal.open_answers(entity.name):
        interrupted.add(answer.source_event_id)
        with contextlib.suppress(Exception):
            event_id = answer.response_event_id
            if event_id is None:
                # Same transaction id as the cut-short send: the homeserver hands back that message if it exists.
                event_id = await entity.client.send_message(
                    answer.room_id,
                    INTERRUPTED_TEXT,
                    thread_root=answer.thread_root,
                    reply_to=answer.source_event_id,
                    txn_id=answer.txn_id,
                    extra_content=_INTERRUPTED,
                )
            await entity.client.edit_message(
                answer.room_id, event_id, INTERRUPTED_TEXT, thread_root=answer.thread_root, extra_content=_INTERRUPTED
            )
            logger.info("interrupted answer marked", agent=entity.name, response_event_id=event_id)
        journal.drop_answer(answer.txn_id)
    for pending in journal.pending(entity.name):
        if pending.event_id in interrupted:
            journal.complete(entity.name, pending.event_id)
            continue
        event = MatrixEvent(**pending.event)
        handler = handlers.get(event.kind)
        if handler is None:  # this entity no longer handles such events: nothing left to finish
            logger.info("pending event no longer handled", agent=entity.name, event_id=event.event_id)
            journal.complete(entity.name, event.event_id)
            continue
        if event.kind is MatrixEventKind.MEMBER:
            logger.info("membership event delivered again", agent=entity.name, event_id=event.event_id)
        else:
            logger.info("finishing a turn cut short by a restart", agent=entity.name, event_id=pending.event_id)
        entity.spawn(handler(entity, event, replay=True), "replay")
