"""`RouterAdmin`: the `matrix_admin` hooks get — room administration as the router, within bounds.

Each entity's hooks get an admin of their own, which acts only in that entity's rooms: the rooms it is
in and the rooms its hooks made or retained (a hook in an agent's turn cannot reach a room of another
agent), and only in rooms the daemon manages or keeps. It never acts against the daemon's own accounts:
a plugin can run its entity's rooms, not take over the daemon's accounts or somebody else's room. Nor can it
weaken an encrypted room (`room_policy`): no public join rule, wider history, guests or encryption change.
"""

from __future__ import annotations

from typing import Any

from mindroom.bots.bot_client import BotClient
from mindroom.bots.directory import Directory
from mindroom.bots.room_policy import weakening_reason
from mindroom.logging_config import get_logger
from mindroom.matrix.transport import quote_path

__all__ = ["RouterAdmin"]

logger = get_logger(__name__)

_ROOMS = "/_matrix/client/v3/rooms/"


class RouterAdmin:
    """Room administration through the router's account for the hooks of one entity (`HookMatrixAdmin`)."""

    def __init__(self, directory: Directory, entity: str) -> None:
        self._directory = directory
        self._entity = entity

    def _rooms(self) -> set[str]:
        """The entity's rooms: those it is in, and those its hooks made or retained."""
        running = self._directory.entities.get(self._entity)
        joined = set(running.joined_rooms) if running is not None else set()
        return joined | {room.room_id for room in self._directory.memory.rooms(self._entity)}

    @property
    def _client(self) -> BotClient:
        router = self._directory.router
        if router is None:
            msg = "the router is not running"
            raise RuntimeError(msg)
        return router.client

    def _room_allowed(self, room_id: str, action: str) -> bool:
        if not self._directory.is_kept(room_id):
            logger.warning("matrix_admin refused: not a room of this daemon", action=action, room_id=room_id)
            return False
        if room_id not in self._rooms():
            logger.warning(
                "matrix_admin refused: not a room of this entity", action=action, room_id=room_id, entity=self._entity
            )
            return False
        return True

    def _user_allowed(self, user_id: str, action: str) -> bool:
        if user_id not in self._directory.bot_user_ids.values():
            return True
        logger.warning("matrix_admin refused: one of the daemon's own accounts", action=action, user_id=user_id)
        return False

    async def get_joined_rooms(self) -> list[str] | None:
        """The rooms the router is in, of those of this entity."""
        rooms = self._rooms()
        return [room for room in await self._client.joined_rooms() if room in rooms]

    async def resolve_alias(self, alias: str) -> str | None:
        """The room id of an alias, or None."""
        return await self._client.resolve_room(alias)

    async def create_room(
        self,
        *,
        name: str,
        alias_localpart: str | None = None,
        topic: str | None = None,
        power_user_ids: list[str] | None = None,
    ) -> str | None:
        """Create a room as the router (power and invites for `power_user_ids`), keep it, return its id."""
        users = [user for user in power_user_ids or () if self._user_allowed(user, "create_room")]
        body: dict[str, Any] = {"name": name, "preset": "private_chat", "invite": users}
        if alias_localpart:
            body["room_alias_name"] = alias_localpart
        if topic:
            body["topic"] = topic
        if users:
            body["power_level_content_override"] = {"users": dict.fromkeys(users, 100) | {self._client.user_id: 100}}
        reply = await self._client.api("POST", "/_matrix/client/v3/createRoom", body)
        room_id = reply.body.get("room_id") if reply.ok and isinstance(reply.body, dict) else None
        if not isinstance(room_id, str):
            logger.warning("matrix_admin could not create a room", error=reply.error)
            return None
        self._directory.keep_room(self._entity, room_id, "retained")
        return room_id

    def retain_room(self, room_id: str) -> None:
        """Keep one of this entity's rooms as the daemon's (it survives restarts); any other room is refused."""
        if room_id not in self._rooms():
            logger.warning(
                "matrix_admin refused: not a room of this entity",
                action="retain_room",
                room_id=room_id,
                entity=self._entity,
            )
            return
        self._directory.keep_room(self._entity, room_id, "retained")

    async def invite_user(self, room_id: str, user_id: str) -> bool:
        """Invite a user into one of the daemon's rooms."""
        if not (self._room_allowed(room_id, "invite_user") and self._user_allowed(user_id, "invite_user")):
            return False
        reply = await self._client.api("POST", f"{_ROOMS}{quote_path(room_id)}/invite", {"user_id": user_id})
        return reply.ok

    async def force_join_user(self, room_id: str, user_id: str) -> bool:
        """Invite, then join the user through the homeserver's admin API (needs the router to be an admin)."""
        if not await self.invite_user(room_id, user_id):
            return False
        path = f"/_synapse/admin/v1/join/{quote_path(room_id)}"
        return (await self._client.api("POST", path, {"user_id": user_id})).ok

    async def kick_user(self, room_id: str, user_id: str, *, reason: str | None = None) -> bool:
        """Remove a user from one of the daemon's rooms."""
        if not (self._room_allowed(room_id, "kick_user") and self._user_allowed(user_id, "kick_user")):
            return False
        body = {"user_id": user_id, **({"reason": reason} if reason else {})}
        return (await self._client.api("POST", f"{_ROOMS}{quote_path(room_id)}/kick", body)).ok

    async def get_room_members(self, room_id: str) -> set[str] | None:
        """The joined members of one of the daemon's rooms."""
        if not self._room_allowed(room_id, "get_room_members"):
            return None
        return set(await self._client.room_members(room_id))

    async def get_profile_avatar(self, user_id: str) -> str | None:
        """A user's avatar URL."""
        reply = await self._client.api("GET", f"/_matrix/client/v3/profile/{quote_path(user_id)}/avatar_url")
        value = reply.body.get("avatar_url") if reply.ok and isinstance(reply.body, dict) else None
        return value if isinstance(value, str) else None

    async def get_room_state_event(
        self, room_id: str, event_type: str, state_key: str
    ) -> tuple[bool, dict[str, Any] | None]:
        """`(True, content)` when found, `(True, None)` when the event does not exist, `(False, None)` otherwise."""
        if not self._room_allowed(room_id, "get_room_state_event"):
            return False, None
        path = f"{_ROOMS}{quote_path(room_id)}/state/{quote_path(event_type)}/{quote_path(state_key)}"
        reply = await self._client.api("GET", path)
        if reply.ok and isinstance(reply.body, dict):
            return True, reply.body
        return (reply.errcode == "M_NOT_FOUND"), None

    async def add_room_to_space(self, space_room_id: str, room_id: str) -> bool:
        """Make one of the daemon's rooms a child of one of its spaces."""
        if not (
            self._room_allowed(space_room_id, "add_room_to_space") and self._room_allowed(room_id, "add_room_to_space")
        ):
            return False
        via = {"via": [self._directory.server_name]}
        return await self.put_room_state(space_room_id, "m.space.child", room_id, via)

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> bool:
        """Write one state event in one of the daemon's rooms."""
        if not self._room_allowed(room_id, "put_room_state"):
            return False
        reason = await weakening_reason(self._client, room_id, event_type, content)
        if reason is not None:
            logger.warning(
                "matrix_admin refused", action="put_room_state", room_id=room_id, type=event_type, reason=reason
            )
            return False
        return await self._client.put_room_state(room_id, event_type, state_key, content)
