"""`RoomMembers`: who has joined which room, as the bots last saw it, for access by room membership.

Only a config that admits people by membership (`mindroom.bots.access.membership_in_use`) fills it: the
managed rooms' members are read when they are set up, each other room's when a bot joins it or starts in
it, and every membership event a bot receives keeps them current. A room never read has no members here,
so it admits nobody by membership.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError, MatrixEvent, MatrixEventKind

__all__ = ["MemberLister", "RoomMembers"]

logger = get_logger(__name__)


class MemberLister(Protocol):
    """A bot's client, as reading a room's members needs it."""

    async def room_members(self, room_id: str) -> list[str]:
        """The joined members of a room."""


class RoomMembers:
    """Room id -> the user ids joined there."""

    def __init__(self) -> None:
        self._rooms: dict[str, set[str]] = {}

    def of(self, room_id: str) -> frozenset[str]:
        """The members of `room_id` (none when it was never read)."""
        return frozenset(self._rooms.get(room_id, ()))

    def known(self, room_id: str) -> bool:
        """Whether the room's members were read."""
        return room_id in self._rooms

    def is_member(self, user_id: str, room_ids: Iterable[str]) -> bool:
        """True when `user_id` has joined one of `room_ids`."""
        return any(user_id in self._rooms.get(room_id, ()) for room_id in room_ids)

    async def read(self, client: MemberLister, room_id: str) -> None:
        """Read the room's members from the homeserver (a failure is logged; the room stays as it was)."""
        try:
            members = await client.room_members(room_id)
        except MatrixError as exc:
            logger.warning("room members could not be read", room_id=room_id, error=str(exc))
            return
        self._rooms[room_id] = set(members)

    def note(self, event: MatrixEvent) -> None:
        """A membership event a bot received: a join adds its member, anything else removes them."""
        if event.kind is not MatrixEventKind.MEMBER or not event.state_key or event.room_id not in self._rooms:
            return
        if event.membership == "join":
            self._rooms[event.room_id].add(event.state_key)
        else:
            self._rooms[event.room_id].discard(event.state_key)
