"""The rooms this daemon's accounts made or were let into, remembered across restarts.

A room the daemon created is its own; an alias that points elsewhere is only used after a check (see
`Orchestrator`), so a room someone else made first under a configured alias is never taken for ours.
`sqlite.rooms.SqliteRoomMemory` keeps them in a file under the data directory,
`postgres.rooms.PostgresRoomMemory` in the state's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["RememberedRoom", "RoomMemory", "RoomOrigin"]

RoomOrigin = Literal["created", "verified", "invited", "retained"]
"""How the room became the daemon's: made by one of its accounts, checked to be owned by one, an invite,
or kept by a plugin through the router (`matrix_admin.retain_room`)."""


@dataclass(frozen=True, slots=True)
class RememberedRoom:
    """One remembered room of one entity."""

    entity: str
    room_id: str
    origin: RoomOrigin
    room_key: str | None


class RoomMemory(Protocol):
    """Which rooms each entity made, verified or was invited into."""

    def remember(self, entity: str, room_id: str, origin: RoomOrigin, room_key: str | None = None) -> None:
        """Keep `room_id` as one of `entity`'s rooms (a later call updates how and under which key)."""

    def forget(self, entity: str, room_id: str) -> None:
        """`entity` left `room_id`."""

    def rooms(self, entity: str | None = None) -> list[RememberedRoom]:
        """The remembered rooms (of one entity, or all), oldest first."""

    def known(self, room_id: str) -> bool:
        """True when any entity remembers `room_id`."""

    def close(self) -> None:
        """Release what the memory holds of its own (the backend closes shared connections)."""
