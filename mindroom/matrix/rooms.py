"""Rooms and room state of one bot's account: aliases, create or join, who owns a room, invites, state events.

`RoomMethods` is a part of `MatrixBotClient`, kept in its own module; it uses the client's nio client,
JSON transport and identity.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.encryption import DeviceCrypto, encryption_state_content
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.transport import JsonReply, JsonTransport, guard_transport, quote_path

__all__ = ["TYPING_TIMEOUT_MS", "RoomEntry", "RoomMethods", "raise_for_error", "room_owned_by"]

logger = get_logger(__name__)

_T = TypeVar("_T")
_ROOMS_PATH = "/_matrix/client/v3/rooms/"
_RACE_JOIN_ATTEMPTS = 20
_RACE_JOIN_DELAY_S = 0.25
TYPING_TIMEOUT_MS = 30_000
_POWER_LEVEL_VERSIONS = frozenset(str(version) for version in range(1, 12))
"""Room versions 1-11, where power levels alone rank the members (creators included)."""


def raise_for_error(response: Any, action: str) -> None:
    """Raise `MatrixRequestError` for a nio error response."""
    if isinstance(response, nio.ErrorResponse):
        status = getattr(getattr(response, "transport_response", None), "status", None)
        raise MatrixRequestError(action, response.status_code, str(response.message or ""), status)


@dataclass(frozen=True, slots=True)
class RoomEntry:
    """A room a bot is now in, and whether it created it just now."""

    room_id: str
    created: bool


def room_owned_by(state: Iterable[Any], our_user_ids: Collection[str]) -> bool:
    """From a room's state events: did one of `our_user_ids` create the room, or hold its top power level?

    Room versions 11+ name the creator only as the create event's sender (12 also in `additional_creators`).
    From room version 12 on, creators outrank every power level and cannot be demoted: a room someone else
    created stays theirs whatever power they gave us, so only creating it counts.
    """
    ours = set(our_user_ids)
    levels: dict[str, Any] = {}
    creators_rule = False
    for event in state:
        if not isinstance(event, dict):
            continue
        content: dict[str, Any] = event["content"] if isinstance(event.get("content"), dict) else {}
        if event.get("type") == "m.room.create":
            creators = {event.get("sender"), content.get("creator"), *(content.get("additional_creators") or [])}
            if creators & ours:
                return True
            creators_rule = str(content.get("room_version", "1")) not in _POWER_LEVEL_VERSIONS
        elif event.get("type") == "m.room.power_levels":
            levels = content
    if creators_rule:
        return False
    users: dict[str, Any] = levels["users"] if isinstance(levels.get("users"), dict) else {}
    default = levels.get("users_default", 0)
    values = [level for level in users.values() if isinstance(level, int)]
    top = max([*values, default if isinstance(default, int) else 0])
    return any(users.get(user_id, default) == top for user_id in ours) and top > 0


def _encryption_event() -> dict[str, Any]:
    return {"type": "m.room.encryption", "state_key": "", "content": encryption_state_content()}


class RoomMethods:
    """The room part of a bot's Matrix client."""

    _nio: nio.AsyncClient
    _transport: JsonTransport
    _crypto: DeviceCrypto
    _bot: str
    _server_name: str
    _user_id: str | None

    async def _call(self, awaitable: Awaitable[_T], action: str) -> _T:
        response = await guard_transport(awaitable, action)
        raise_for_error(response, action)
        return response

    # -- rooms ---------------------------------------------------------------------------------------

    def room_alias(self, key: str) -> str:
        """`#alias:server` for a bare key like `lobby`; full aliases pass through."""
        return key if key.startswith("#") else f"#{key}:{self._server_name}"

    async def resolve_room(self, key_or_id: str) -> str | None:
        """The room id for `!id`, `#alias:server` or a bare key (`lobby` -> `#lobby:<server>`); None if unknown."""
        if key_or_id.startswith("!"):
            return key_or_id
        response = await guard_transport(self._nio.room_resolve_alias(self.room_alias(key_or_id)), "resolve alias")
        if isinstance(response, nio.RoomResolveAliasResponse):
            return str(response.room_id)
        return None

    async def ensure_room(
        self, key: str, *, name: str | None = None, topic: str | None = None, invite: Sequence[str] = ()
    ) -> str:
        """`open_room`, then invite `invite`: for rooms whose owner is not in question (ids, test rooms)."""
        entry = await self.open_room(key, name=name, topic=topic)
        await self.invite_missing(entry.room_id, invite)
        return entry.room_id

    async def open_room(
        self,
        key: str,
        *,
        name: str | None = None,
        topic: str | None = None,
        encrypted: bool = False,
        space: bool = False,
    ) -> RoomEntry:
        """Join the room behind `key`, or create it under that alias (members may invite; encrypted if asked; a
        Matrix space with `space`).

        Nobody is invited here: whoever asked decides first whether an existing room may be used
        (`room_is_ours`), then invites (`invite_missing`).
        """
        room_id = await self.resolve_room(key)
        if room_id is not None:
            return RoomEntry(await self.join(room_id), created=False)
        alias = self.room_alias(key)
        localpart, _, alias_server = alias[1:].partition(":")
        if alias_server != self._server_name:
            return RoomEntry(await self.join(alias), created=False)  # another server's alias: joining is all we can do
        room_id, created = await self._create_or_find(alias, localpart, name, topic, encrypted, space)
        if not created:
            room_id = await self._join_created_elsewhere(room_id)
        return RoomEntry(room_id, created=created)

    async def room_is_ours(self, room_id: str, our_user_ids: Collection[str]) -> bool:
        """True when one of `our_user_ids` created the room or holds its top power level (read as a member)."""
        reply = await self._transport.request("GET", f"{_ROOMS_PATH}{quote_path(room_id)}/state")
        if not reply.ok or not isinstance(reply.body, list):
            return False
        return room_owned_by(reply.body, our_user_ids)

    async def _create_or_find(
        self, alias: str, localpart: str, name: str | None, topic: str | None, encrypted: bool, space: bool = False
    ) -> tuple[str, bool]:
        initial_state = [_encryption_event()] if encrypted else []
        response = await guard_transport(
            self._nio.room_create(
                alias=localpart,
                name=name,
                topic=topic,
                preset=nio.RoomPreset.private_chat,
                initial_state=initial_state,
                power_level_override={"invite": 0},
                space=space,
            ),
            "create room",
        )
        if isinstance(response, nio.RoomCreateResponse):
            if encrypted:
                self._crypto.mark_encrypted(str(response.room_id))
            logger.info("room created", agent=self._bot, room_id=response.room_id, alias=alias, encrypted=encrypted)
            return str(response.room_id), True
        # Another bot may have taken the alias between our lookup and our create (Synapse answers
        # M_ROOM_IN_USE or, when both creates overlap, M_UNKNOWN): join theirs.
        room_id = await self.resolve_room(alias)
        if room_id is None:
            raise_for_error(response, "create room")
            raise MatrixRequestError("create room", None, f"no room for {alias}")
        logger.info("room alias taken; using its room", agent=self._bot, room_id=room_id, alias=alias)
        return room_id, False

    async def _join_created_elsewhere(self, room_id: str) -> str:
        """Join a room another bot is still creating: its invite, or the room itself, may not be there yet."""
        for _ in range(_RACE_JOIN_ATTEMPTS - 1):
            with contextlib.suppress(MatrixRequestError):
                return await self.join(room_id)
            await asyncio.sleep(_RACE_JOIN_DELAY_S)
        return await self.join(room_id)

    async def enable_encryption(self, room_id: str) -> bool:
        """Turn end-to-end encryption on (it cannot be turned off again); True if it was off and is on now."""
        if await self._crypto.room_encrypted(room_id):
            return False
        event = _encryption_event()
        if not await self.put_room_state(room_id, event["type"], event["state_key"], event["content"]):
            logger.warning("room encryption could not be turned on", agent=self._bot, room_id=room_id)
            return False
        self._crypto.mark_encrypted(room_id)
        logger.info("room encryption turned on", agent=self._bot, room_id=room_id)
        return True

    async def invite_missing(self, room_id: str, user_ids: Sequence[str]) -> None:
        """Invite each of `user_ids` that is neither joined nor invited yet (a failure is logged, not raised)."""
        if not user_ids:
            return
        members = await self.get_room_state(room_id, "m.room.member") or {}
        for user_id in user_ids:
            membership = members.get(user_id, {}).get("membership")
            if user_id == self._user_id or membership in {"join", "invite"}:
                continue
            try:
                await self.invite(room_id, user_id)
            except MatrixRequestError as exc:
                logger.warning(
                    "inviting a user failed", agent=self._bot, room_id=room_id, user_id=user_id, error=str(exc)
                )

    async def join(self, room_id_or_alias: str) -> str:
        """Join a room by id or alias; returns the room id."""
        response = await self._call(self._nio.join(room_id_or_alias), "join")
        return str(response.room_id)

    async def invite(self, room_id: str, user_id: str) -> None:
        """Invite `user_id`; inviting someone already in the room is not an error."""
        response = await guard_transport(self._nio.room_invite(room_id, user_id), "invite")
        if isinstance(response, nio.ErrorResponse) and "already in the room" in str(response.message):
            return
        raise_for_error(response, "invite")

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """One client-API request as this bot (`path` from `/_matrix/...`); the reply, whatever its status."""
        return await self._transport.request(method, path, body=body)

    async def set_typing(self, room_id: str, on: bool, timeout_ms: int = TYPING_TIMEOUT_MS) -> None:
        """Show (or stop) this bot's typing notice in a room; it ends by itself after `timeout_ms`."""
        await self._call(self._nio.room_typing(room_id, on, timeout=timeout_ms), "typing")

    async def leave(self, room_id: str) -> None:
        """Leave a room, or reject an invite to it."""
        await self._call(self._nio.room_leave(room_id), "leave")

    async def joined_rooms(self) -> list[str]:
        """The ids of the rooms the bot has joined."""
        response = await self._call(self._nio.joined_rooms(), "joined rooms")
        return [str(room_id) for room_id in response.rooms]

    async def room_members(self, room_id: str) -> list[str]:
        """The user ids of the joined members of a room."""
        response = await self._call(self._nio.joined_members(room_id), "joined members")
        return [str(member.user_id) for member in response.members]

    # -- room state ----------------------------------------------------------------------------------

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """With `state_key`: that event's content; without: `{state_key: content}` of the type. None on error."""
        if state_key is not None:
            path = f"{_ROOMS_PATH}{quote_path(room_id)}/state/{quote_path(event_type)}/{quote_path(state_key)}"
            reply = await self._transport.request("GET", path)
            return reply.body if reply.ok and isinstance(reply.body, dict) else None
        reply = await self._transport.request("GET", f"{_ROOMS_PATH}{quote_path(room_id)}/state")
        if not reply.ok or not isinstance(reply.body, list):
            return None
        return {
            event["state_key"]: event.get("content") if isinstance(event.get("content"), dict) else {}
            for event in reply.body
            if isinstance(event, dict) and event.get("type") == event_type and isinstance(event.get("state_key"), str)
        }

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Set a state event; False when the homeserver refuses (e.g. too little power)."""
        path = f"{_ROOMS_PATH}{quote_path(room_id)}/state/{quote_path(event_type)}/{quote_path(state_key)}"
        reply = await self._transport.request("PUT", path, body=dict(content))
        if not reply.ok:
            logger.info("room state refused", agent=self._bot, room_id=room_id, type=event_type, errcode=reply.errcode)
        return reply.ok
