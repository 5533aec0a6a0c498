"""What a plugin may not do to an encrypted room: open it to anyone, or widen who reads its history.

End-to-end encryption protects a room only as long as its membership and history stay as private as the
people in it chose. A hook writing room state (`ctx.put_room_state`, `ctx.matrix_admin.put_room_state`)
therefore cannot, in an encrypted room, make the room public (`m.room.join_rules` → `public`), widen its
history's visibility (`m.room.history_visibility` to a less private value than it has, `world_readable`
above all), let guests in (`m.room.guest_access` → `can_join`) or touch `m.room.encryption` itself (an
encrypted room cannot be made plain, and a changed algorithm or rotation would weaken it). In a room that is
not encrypted these writes stay allowed (enabling encryption there is welcome). When the room's encryption
cannot be read, the write is refused: a failed read never opens a room.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindroom.bots.bot_client import BotClient

__all__ = ["GUARDED_STATE_TYPES", "weakening_reason"]

_ENCRYPTION = "m.room.encryption"
_JOIN_RULES = "m.room.join_rules"
_HISTORY = "m.room.history_visibility"
_GUEST_ACCESS = "m.room.guest_access"
GUARDED_STATE_TYPES = frozenset({_ENCRYPTION, _JOIN_RULES, _HISTORY, _GUEST_ACCESS})
# From the most private to the least; the Matrix default (no event) is `shared`.
_HISTORY_ORDER = ("joined", "invited", "shared", "world_readable")


def _history_rank(value: object) -> int:
    """How widely history can be read (an unknown value counts as the widest)."""
    return _HISTORY_ORDER.index(value) if value in _HISTORY_ORDER else len(_HISTORY_ORDER)


async def _encrypted(client: BotClient, room_id: str) -> bool | None:
    """True or False when the room's state says; None when it could not be read."""
    state = await client.get_room_state(room_id, _ENCRYPTION)
    if state is None:
        return None
    return bool(state)


async def weakening_reason(client: BotClient, room_id: str, event_type: str, content: Mapping[str, Any]) -> str | None:
    """Why writing this state event would weaken an encrypted room (None: the write may go ahead)."""
    if event_type not in GUARDED_STATE_TYPES:
        return None
    encrypted = await _encrypted(client, room_id)
    if encrypted is False:
        return None
    if encrypted is None:
        return "the room's encryption could not be read"
    if event_type == _ENCRYPTION:
        return "an encrypted room's encryption is not changed by plugins"
    if event_type == _JOIN_RULES:
        rule = content.get("join_rule")
        return "an encrypted room is not made public" if rule == "public" or not isinstance(rule, str) else None
    if event_type == _GUEST_ACCESS:
        return "guests are not let into an encrypted room" if content.get("guest_access") != "forbidden" else None
    wanted = _history_rank(content.get("history_visibility"))
    current = await client.get_room_state(room_id, _HISTORY, "")
    now = _history_rank(current.get("history_visibility") if current else "shared")
    if wanted >= len(_HISTORY_ORDER) - 1 or wanted > now:
        return "an encrypted room's history is not opened wider"
    return None
