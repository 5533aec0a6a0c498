"""A managed room's Matrix state brought to what config says: name, join rule, directory listing, admins.

Each write is made only when the room differs (one read of its state first), so a room already right costs a
read; a refusal (too little power) is logged and the room is used as it is. Encryption, which can only be
turned on, is the client's `enable_encryption`.
"""

from __future__ import annotations

from typing import Any, Protocol

from mindroom.config.rooms import RoomState
from mindroom.logging_config import get_logger
from mindroom.matrix.transport import JsonReply, quote_path

__all__ = ["ADMIN_POWER", "RoomStateClient", "apply_room_state"]

logger = get_logger(__name__)

ADMIN_POWER = 100


class RoomStateClient(Protocol):
    """What applying a room's state needs of a bot's client."""

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None: ...

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Any) -> bool: ...

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply: ...


async def apply_room_state(
    client: RoomStateClient, room_id: str, state: RoomState, *, name: bool, join: bool, listed: bool, admins: bool
) -> None:
    """Bring the room to `state` in the parts asked for (`name`, `join` rule, `listed`, `admins`)."""
    if name and state.name:
        current = await client.get_room_state(room_id, "m.room.name", "")
        if (current or {}).get("name") != state.name:
            await client.put_room_state(room_id, "m.room.name", "", {"name": state.name})
    if join:
        current = await client.get_room_state(room_id, "m.room.join_rules", "")
        if (current or {}).get("join_rule") != state.join_policy:
            await client.put_room_state(room_id, "m.room.join_rules", "", {"join_rule": state.join_policy})
    if listed:
        await _list(client, room_id, state.listed)
    if admins and state.admins:
        await _raise_admins(client, room_id, state.admins)


async def _list(client: RoomStateClient, room_id: str, listed: bool) -> None:
    path = f"/_matrix/client/v3/directory/list/room/{quote_path(room_id)}"
    visibility = "public" if listed else "private"
    current = await client.api("GET", path)
    if current.ok and isinstance(current.body, dict) and current.body.get("visibility") == visibility:
        return
    reply = await client.api("PUT", path, {"visibility": visibility})
    if not reply.ok:
        logger.warning("room directory listing refused", room_id=room_id, visibility=visibility, errcode=reply.errcode)


async def _raise_admins(client: RoomStateClient, room_id: str, admins: tuple[str, ...]) -> None:
    levels = await client.get_room_state(room_id, "m.room.power_levels", "")
    if levels is None:
        logger.warning("room power levels unreadable; admins not set", room_id=room_id)
        return
    users = dict(levels.get("users") or {})
    missing = [user for user in admins if not isinstance(users.get(user), int) or users[user] < ADMIN_POWER]
    if not missing:
        return
    users.update(dict.fromkeys(missing, ADMIN_POWER))
    if not await client.put_room_state(room_id, "m.room.power_levels", "", {**levels, "users": users}):
        logger.warning("room admins could not be set", room_id=room_id, admins=missing)
