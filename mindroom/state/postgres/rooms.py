"""Remembered rooms in PostgreSQL: read into memory under the lock, every change written through `StateConnection`."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from mindroom.state.postgres.connection import StateConnection
from mindroom.state.rooms import RememberedRoom, RoomOrigin

__all__ = ["PostgresRoomMemory"]


class PostgresRoomMemory:
    """`RoomMemory` on PostgreSQL."""

    def __init__(self, connection: StateConnection) -> None:
        self._conn = connection
        self._lock = threading.Lock()
        self._rooms: dict[tuple[str, str], tuple[float, RememberedRoom]] = {}

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """On the connection's thread, under the lock: read every remembered room."""
        rows = conn.execute("SELECT entity, room_id, origin, room_key, remembered_at FROM mindroom.rooms").fetchall()
        with self._lock:
            for entity, room_id, origin, room_key, remembered_at in rows:
                self._rooms[(entity, room_id)] = (remembered_at, RememberedRoom(entity, room_id, origin, room_key))

    def remember(self, entity: str, room_id: str, origin: RoomOrigin, room_key: str | None = None) -> None:
        """Keep `room_id` as one of `entity`'s rooms (a later call updates how and under which key)."""
        now = time.time()
        with self._lock:
            self._rooms[(entity, room_id)] = (now, RememberedRoom(entity, room_id, origin, room_key))
        self._conn.write(
            "INSERT INTO mindroom.rooms (entity, room_id, origin, room_key, remembered_at) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (entity, room_id) DO UPDATE SET origin = EXCLUDED.origin, room_key = EXCLUDED.room_key,"
            " remembered_at = EXCLUDED.remembered_at",
            (entity, room_id, origin, room_key, now),
        )

    def forget(self, entity: str, room_id: str) -> None:
        """`entity` left `room_id`."""
        with self._lock:
            self._rooms.pop((entity, room_id), None)
        self._conn.write("DELETE FROM mindroom.rooms WHERE entity = %s AND room_id = %s", (entity, room_id))

    def rooms(self, entity: str | None = None) -> list[RememberedRoom]:
        """The remembered rooms (of one entity, or all), oldest first."""
        with self._lock:
            found = sorted(self._rooms.values(), key=lambda item: item[0])
        return [room for _at, room in found if entity is None or room.entity == entity]

    def known(self, room_id: str) -> bool:
        """True when any entity remembers `room_id`."""
        with self._lock:
            return any(key[1] == room_id for key in self._rooms)

    def close(self) -> None:
        """Nothing of its own to close: the backend flushes and closes the connection."""
