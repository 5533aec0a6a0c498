"""Thread tags and resolution kept in the room's state, as MindRoom keeps them, so every client reads the same.

Each tag of a thread is one `com.mindroom.thread.tags` state event whose state key is the JSON array
`[thread_root_id, tag]` (compact), with content `{"set_by", "set_at", "data"}` (and `note` when given); a
removed tag is the same state key with empty content. A thread is resolved while it has the tag `resolved`.
One event per tag means two people tagging one thread at once never overwrite each other's tags.

Who may change tags is the room's rule for that event type: the person must be joined and have the power
level the room's power levels ask for it (`events`, else `state_default`, else 50). The write is made by the
first of the daemon's accounts offered that has that power too, so an agent without power in a room still
tags for a person who has it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from mindroom.logging_config import get_logger
from mindroom.matrix.errors import MatrixError
from mindroom.matrix.transport import JsonReply, quote_path

__all__ = [
    "RESOLVED_TAG",
    "THREAD_TAGS_EVENT_TYPE",
    "TagRecord",
    "TagStateClient",
    "ThreadTagError",
    "ThreadTagStore",
    "normalize_tag",
    "parse_state_key",
    "required_power",
    "state_key",
    "user_power",
]

logger = get_logger(__name__)

THREAD_TAGS_EVENT_TYPE = "com.mindroom.thread.tags"
RESOLVED_TAG = "resolved"
_POWER_LEVELS = "m.room.power_levels"
_DEFAULT_STATE_POWER = 50
_TAG_NAME = re.compile(r"^[a-z0-9-]{1,50}$")
_CREATORS_PRIVILEGED_FROM = 12


class ThreadTagError(MatrixError):
    """A tag that cannot be read or written: a bad name, too little power, or a refused write."""


class TagStateClient(Protocol):
    """What the tag store needs of an account: its id, its rooms' members and state."""

    @property
    def user_id(self) -> str:
        """The account's Matrix user id."""

    async def room_members(self, room_id: str) -> list[str]:
        """The joined members of a room."""

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """A state event's content (or every one of the type by state key); None on error."""

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Set a state event; False when refused."""

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """One client-API request as this account."""


@dataclass(frozen=True, slots=True)
class TagRecord:
    """One tag on one thread: who set it and when, an optional note and MindRoom's free-form data."""

    set_by: str
    set_at: str
    note: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def content(self) -> dict[str, Any]:
        """The state event's content."""
        content: dict[str, Any] = {"set_by": self.set_by, "set_at": self.set_at, "data": dict(self.data)}
        if self.note:
            content["note"] = self.note
        return content


def normalize_tag(tag: object) -> str:
    """A tag name as stored (lower case, letters, digits and hyphens, at most 50); `ThreadTagError` otherwise."""
    name = tag.strip().lower() if isinstance(tag, str) else ""
    if not _TAG_NAME.fullmatch(name):
        raise ThreadTagError(f"tag {tag!r} is not a tag name: use 1 to 50 lower-case letters, digits or hyphens")
    return name


def state_key(thread_root_id: str, tag: str) -> str:
    """The state key of one tag of one thread."""
    return json.dumps([thread_root_id, tag], separators=(",", ":"))


def parse_state_key(key: object) -> tuple[str, str] | None:
    """(thread root, tag) of a state key, None for one not written this way."""
    try:
        parsed = json.loads(key) if isinstance(key, str) else None
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, list) or len(parsed) != 2 or not all(isinstance(part, str) for part in parsed):
        return None
    root = parsed[0].strip()
    try:
        return (root, normalize_tag(parsed[1])) if root else None
    except ThreadTagError:
        return None


def _record(content: Mapping[str, Any]) -> TagRecord | None:
    set_by, set_at = content.get("set_by"), content.get("set_at")
    if not isinstance(set_by, str) or not set_by.strip() or not isinstance(set_at, str):
        return None
    note = content.get("note")
    data = content.get("data")
    return TagRecord(
        set_by.strip(),
        set_at,
        note.strip() or None if isinstance(note, str) else None,
        dict(data) if isinstance(data, Mapping) else {},
    )


def _level(value: object) -> int | None:
    return value if type(value) is int else None


def required_power(levels: Mapping[str, Any]) -> int:
    """The power the room's power levels ask for a thread tag event."""
    events = levels.get("events")
    if isinstance(events, Mapping):
        level = _level(events.get(THREAD_TAGS_EVENT_TYPE))
        if level is not None:
            return level
    level = _level(levels.get("state_default"))
    return _DEFAULT_STATE_POWER if level is None else level


def user_power(levels: Mapping[str, Any], user_id: str) -> int:
    """A user's power level in the room's power levels."""
    users = levels.get("users")
    if isinstance(users, Mapping):
        level = _level(users.get(user_id))
        if level is not None:
            return level
    return _level(levels.get("users_default")) or 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class ThreadTagStore:
    """Tags of one room's threads, read by `reader` and written by the first of `writers` with the power."""

    def __init__(self, reader: TagStateClient, writers: Sequence[TagStateClient] = ()) -> None:
        self._reader = reader
        self._writers = tuple(writers) or (reader,)

    async def room_tags(self, room_id: str) -> dict[str, dict[str, TagRecord]]:
        """Every tagged thread of the room: root id -> tag -> record (removed tags left out)."""
        events = await self._reader.get_room_state(room_id, THREAD_TAGS_EVENT_TYPE)
        if events is None:
            raise ThreadTagError(f"the state of room {room_id} could not be read")
        threads: dict[str, dict[str, TagRecord]] = {}
        for key, content in events.items():
            parsed = parse_state_key(key)
            record = _record(content) if parsed is not None and content else None
            if parsed is not None and record is not None:
                threads.setdefault(parsed[0], {})[parsed[1]] = record
        return {root: dict(sorted(tags.items())) for root, tags in sorted(threads.items())}

    async def thread_tags(self, room_id: str, thread_root_id: str) -> dict[str, TagRecord]:
        """The tags of one thread, by name."""
        return (await self.room_tags(room_id)).get(thread_root_id, {})

    async def add(self, room_id: str, thread_root_id: str, tag: str, set_by: str, note: str | None = None) -> TagRecord:
        """Tag a thread for `set_by` (who must be allowed to); the record written."""
        name = normalize_tag(tag)
        writer = await self._writer(room_id, set_by)
        record = TagRecord(set_by, _now(), (note or "").strip() or None)
        await self._put(writer, room_id, state_key(thread_root_id, name), record.content())
        logger.info("thread tagged", room_id=room_id, thread_id=thread_root_id, tag=name, by=set_by)
        return record

    async def remove(self, room_id: str, thread_root_id: str, tag: str, removed_by: str) -> bool:
        """Take a tag off a thread for `removed_by` (who must be allowed to); False when it had no such tag."""
        name = normalize_tag(tag)
        writer = await self._writer(room_id, removed_by)
        if name not in await self.thread_tags(room_id, thread_root_id):
            return False
        await self._put(writer, room_id, state_key(thread_root_id, name), {})
        logger.info("thread untagged", room_id=room_id, thread_id=thread_root_id, tag=name, by=removed_by)
        return True

    async def may_change(self, room_id: str, user_id: str) -> bool:
        """Whether the person may change thread tags in the room (joined, with the power the room asks)."""
        rule = await self._rule(room_id)
        return await rule.allows(user_id) and user_id in await self._reader.room_members(room_id)

    async def _rule(self, room_id: str) -> _PowerRule:
        levels = await self._reader.get_room_state(room_id, _POWER_LEVELS, "")
        if levels is None:
            raise ThreadTagError(f"the power levels of room {room_id} could not be read")
        return _PowerRule(self._reader, room_id, levels)

    async def _writer(self, room_id: str, user_id: str) -> TagStateClient:
        rule = await self._rule(room_id)
        if not await rule.allows(user_id) or user_id not in await self._reader.room_members(room_id):
            logger.info("thread tag change refused", room_id=room_id, user=user_id, needed=rule.needed)
            raise ThreadTagError(
                f"{user_id} may not change thread tags in this room: it takes power level {rule.needed} "
                f"for {THREAD_TAGS_EVENT_TYPE} (the room's power levels) and being in the room"
            )
        for writer in self._writers:
            if await rule.allows(writer.user_id):
                return writer
        raise ThreadTagError(f"none of the daemon's accounts here has power level {rule.needed} to write thread tags")

    async def _put(self, writer: TagStateClient, room_id: str, key: str, content: Mapping[str, Any]) -> None:
        if not await writer.put_room_state(room_id, THREAD_TAGS_EVENT_TYPE, key, content):
            raise ThreadTagError(f"the homeserver refused the thread tag change in room {room_id}")


class _PowerRule:
    """Who may send thread tag events in one room: power levels, and from room version 12 its creators."""

    def __init__(self, client: TagStateClient, room_id: str, levels: Mapping[str, Any]) -> None:
        self._client = client
        self._room_id = room_id
        self._levels = levels
        self.needed = required_power(levels)
        self._creators: frozenset[str] | None = None

    async def allows(self, user_id: str) -> bool:
        """Whether `user_id` has the power the room asks for the event type."""
        if user_power(self._levels, user_id) >= self.needed:
            return True
        # Rooms from version 12 never list their creators, whose power is unlimited: read only on a shortfall.
        if self._creators is None:
            self._creators = await _creators(self._client, self._room_id)
        return user_id in self._creators


async def _creators(client: TagStateClient, room_id: str) -> frozenset[str]:
    reply = await client.api("GET", f"/_matrix/client/v3/rooms/{quote_path(room_id)}/state")
    events = reply.body if reply.ok and isinstance(reply.body, list) else []
    create = next((e for e in events if isinstance(e, dict) and e.get("type") == "m.room.create"), None)
    content = create.get("content") if create is not None else None
    if not isinstance(content, Mapping):
        return frozenset()
    version = str(content.get("room_version", "1"))
    if not version.isdigit() or int(version) < _CREATORS_PRIVILEGED_FROM:
        return frozenset()
    extra = content.get("additional_creators")
    others = [user for user in extra if isinstance(user, str)] if isinstance(extra, list) else []
    return frozenset({str(create.get("sender")) if create is not None else "", *others} - {""})
