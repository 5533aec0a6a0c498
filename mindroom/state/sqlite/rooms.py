"""`RoomMemory` in SQLite: `<data>/state/rooms.db`, every change committed at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mindroom.private_files import open_private_database
from mindroom.state.rooms import RememberedRoom, RoomOrigin

__all__ = ["SqliteRoomMemory"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    entity TEXT NOT NULL,
    room_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    room_key TEXT,
    remembered_at REAL NOT NULL,
    PRIMARY KEY (entity, room_id)
);
"""


class SqliteRoomMemory:
    """`RoomMemory` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path, _SCHEMA)

    def remember(self, entity: str, room_id: str, origin: RoomOrigin, room_key: str | None = None) -> None:
        """Keep `room_id` as one of `entity`'s rooms (a later call updates how and under which key)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO rooms (entity, room_id, origin, room_key, remembered_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (entity, room_id, origin, room_key, time.time()),
            )

    def forget(self, entity: str, room_id: str) -> None:
        """`entity` left `room_id`."""
        with self._lock:
            self._db.execute("DELETE FROM rooms WHERE entity = ? AND room_id = ?", (entity, room_id))

    def rooms(self, entity: str | None = None) -> list[RememberedRoom]:
        """The remembered rooms (of one entity, or all), oldest first."""
        sql = "SELECT entity, room_id, origin, room_key FROM rooms"
        params: tuple[str, ...] = ()
        if entity is not None:
            sql += " WHERE entity = ?"
            params = (entity,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY remembered_at", params).fetchall()
        return [RememberedRoom(*row) for row in rows]

    def known(self, room_id: str) -> bool:
        """True when any entity remembers `room_id`."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM rooms WHERE room_id = ? LIMIT 1", (room_id,)).fetchone() is not None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
