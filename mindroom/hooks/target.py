"""`MessageTarget`: where one message lives and where its answer goes (room, threads, reply, session).

Published under `mindroom.message_target` too, the path plugins of the 2026 API import it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MessageTarget", "session_id_for"]


def session_id_for(room_id: str, resolved_thread_id: str | None) -> str:
    """The persistence key of a conversation: the room for room level, else `<room_id>:<thread root>`."""
    return room_id if resolved_thread_id is None else f"{room_id}:{resolved_thread_id}"


def _optional_id(name: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        msg = f"MessageTarget.{name} must be None or a non-empty string, got {value!r}"
        raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class MessageTarget:
    """The room, the thread the inbound event named, the thread the answer goes to, and the session key.

    `resolved_thread_id=None` means the answer goes to the room itself. `session_id` left empty is derived
    from the room and the resolved thread (`session_id_for`).
    """

    room_id: str
    source_thread_id: str | None = None
    resolved_thread_id: str | None = None
    reply_to_event_id: str | None = None
    session_id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.room_id, str) or not self.room_id:
            msg = f"MessageTarget.room_id must be a non-empty string, got {self.room_id!r}"
            raise ValueError(msg)
        _optional_id("source_thread_id", self.source_thread_id)
        _optional_id("resolved_thread_id", self.resolved_thread_id)
        _optional_id("reply_to_event_id", self.reply_to_event_id)
        if not self.session_id:
            object.__setattr__(self, "session_id", session_id_for(self.room_id, self.resolved_thread_id))
        elif not isinstance(self.session_id, str):
            msg = f"MessageTarget.session_id must be a non-empty string, got {self.session_id!r}"
            raise ValueError(msg)

    @property
    def thread_id(self) -> str | None:
        """The hooks spec's name for `source_thread_id`."""
        return self.source_thread_id

    @property
    def is_room_mode(self) -> bool:
        """True when the answer goes to the room itself, not into a thread."""
        return self.resolved_thread_id is None

    @property
    def lifecycle_key(self) -> tuple[str, str | None]:
        """What identifies one conversation's answers: the room and the resolved thread."""
        return (self.room_id, self.resolved_thread_id)

    @property
    def log_context(self) -> dict[str, str]:
        """The set fields, as keyword fields for a log line."""
        fields = {
            "room_id": self.room_id,
            "thread_id": self.source_thread_id,
            "resolved_thread_id": self.resolved_thread_id,
            "reply_to_event_id": self.reply_to_event_id,
            "session_id": self.session_id,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def with_thread_root(self, resolved_thread_id: str | None) -> MessageTarget:
        """A copy answering into another thread (None: the room), with its session key recomputed."""
        if resolved_thread_id == self.resolved_thread_id:
            return self
        return MessageTarget(self.room_id, self.source_thread_id, resolved_thread_id, self.reply_to_event_id)

    @classmethod
    def resolve(
        cls,
        room_id: str,
        thread_id: str | None,
        reply_to_event_id: str | None,
        thread_start_root_event_id: str | None = None,
        room_mode: bool = False,
    ) -> MessageTarget:
        """The target of an answer: in room mode the room, else the event's thread, else a new thread.

        A new thread starts at `thread_start_root_event_id`, or at the event replied to.
        """
        resolved = None if room_mode else (thread_id or thread_start_root_event_id or reply_to_event_id)
        return cls(room_id, thread_id, resolved, reply_to_event_id)

    @classmethod
    def for_scheduled_task(cls, workflow: Any) -> MessageTarget:
        """The target of a scheduled message (`room_id`, `thread_id`, optional `new_thread` on `workflow`)."""
        room_id = getattr(workflow, "room_id", None)
        if not room_id:
            msg = "a scheduled task needs a room_id to have a MessageTarget"
            raise ValueError(msg)
        new_thread = bool(getattr(workflow, "new_thread", False))
        thread_id = None if new_thread else getattr(workflow, "thread_id", None)
        return cls.resolve(room_id, thread_id, None, room_mode=thread_id is None)

    def to_metadata(self) -> dict[str, str | None]:
        """The target as JSON-ready data (for event content or stored state)."""
        return {
            "room_id": self.room_id,
            "source_thread_id": self.source_thread_id,
            "resolved_thread_id": self.resolved_thread_id,
            "reply_to_event_id": self.reply_to_event_id,
            "session_id": self.session_id,
        }

    @classmethod
    def from_metadata(cls, data: object) -> MessageTarget:
        """The target `to_metadata` wrote (`thread_id` is read for `source_thread_id` too); `ValueError` if invalid."""
        if not isinstance(data, Mapping):
            msg = f"MessageTarget metadata must be a mapping, got {type(data).__name__}"
            raise ValueError(msg)  # one error type for every invalid input, as the constructor raises
        source = data.get("source_thread_id", data.get("thread_id"))
        return cls(
            data.get("room_id"),  # type: ignore[arg-type]  # validated by the constructor
            source,
            data.get("resolved_thread_id"),
            data.get("reply_to_event_id"),
            data.get("session_id") or "",
        )
