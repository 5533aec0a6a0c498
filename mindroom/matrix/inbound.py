"""The last steps of every inbound path (the sync loop and appservice transactions): open one raw event for one
bot and hand it to its handler, and answer an invite.

Both paths end here, so a bot handles an event the same way whichever way it arrived: decrypted with its own
device's keys (or parked until they come), normalized, and given to the handler with its failure contained.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.undecrypted import SyncDecryption, is_encrypted
from mindroom.matrix.errors import MatrixConnectionError, MatrixError
from mindroom.matrix.events import MatrixEvent, event_from_raw

__all__ = ["EventHandler", "InviteHandler", "answer_invite", "deliver_raw", "inviter_of"]

logger = get_logger(__name__)

EventHandler = Callable[[MatrixEvent], Awaitable[None]]
InviteHandler = Callable[[str, str], Awaitable[bool]]


async def deliver_raw(
    bot_name: str,
    decryption: SyncDecryption | None,
    room_id: str,
    raw: Any,
    handler: EventHandler,
    *,
    decrypted: bool = False,
) -> None:
    """Decrypt `raw` with the bot's keys (an unreadable one is parked), normalize it and call `handler`.

    An encrypted event sent before the bot's room keys came back from the key backup is marked `after_restore`.

    A failing handler is logged, never raised: one bad event must not stall the events after it.
    """
    if decryption is not None and is_encrypted(raw):
        opened = decryption.open(room_id, raw)
        if opened is None:
            return  # parked until its room key arrives
        raw, decrypted = opened, True
    if decrypted:
        held = decryption is not None and decryption.held(raw)
        event = event_from_raw(room_id, raw, encrypted=True, after_restore=held)
    else:
        event = _opened(room_id, raw)
    if event is None:
        logger.warning("unusable event skipped", agent=bot_name, room_id=room_id)
        return
    try:
        await handler(event)
    except Exception:
        logger.exception("event handler failed", agent=bot_name, room_id=room_id, event_id=event.event_id)


_OPENED: dict[int, tuple[Any, MatrixEvent | None]] = {}
_OPENED_KEEP = 64


def _opened(room_id: str, raw: Any) -> MatrixEvent | None:
    """`event_from_raw` of a plain event, once per raw object: one transaction hands the same object to every
    bot in the room (the object is kept with its reading, so an id is never taken for another's)."""
    key = id(raw)
    hit = _OPENED.get(key)
    if hit is not None and hit[0] is raw and hit[1] is not None and hit[1].room_id == room_id:
        return hit[1]
    event = event_from_raw(room_id, raw)
    _OPENED[key] = (raw, event)
    if len(_OPENED) > _OPENED_KEEP:
        del _OPENED[next(iter(_OPENED))]
    return event


def inviter_of(invite_state: Iterable[Any], user_id: str) -> str:
    """Who invited `user_id`, read from a room's stripped invite state ("" when it does not say)."""
    inviter = ""
    for raw in invite_state:
        if not isinstance(raw, dict) or raw.get("type") != "m.room.member" or raw.get("state_key") != user_id:
            continue
        content = raw.get("content")
        sender = raw.get("sender")
        if isinstance(content, dict) and content.get("membership") == "invite" and isinstance(sender, str):
            inviter = sender
    return inviter


async def answer_invite(
    bot_name: str,
    room_id: str,
    inviter: str,
    on_invite: InviteHandler,
    join: Callable[[str], Awaitable[str]],
    leave: Callable[[str], Awaitable[None]],
) -> None:
    """Ask `on_invite` whether to accept, then join or reject; a refused request is logged, a lost connection raised."""
    try:
        accept = await on_invite(room_id, inviter)
    except Exception:
        logger.exception("invite handler failed", agent=bot_name, room_id=room_id, inviter=inviter)
        return
    try:
        if accept:
            await join(room_id)
            logger.info("room joined on invite", agent=bot_name, room_id=room_id, inviter=inviter)
        else:
            await leave(room_id)
            logger.info("invite rejected", agent=bot_name, room_id=room_id, inviter=inviter)
    except MatrixConnectionError:
        raise
    except MatrixError as exc:
        logger.warning("answering an invite failed", agent=bot_name, room_id=room_id, error=str(exc))
