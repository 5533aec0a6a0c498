"""Normalized Matrix events: plain data built from raw event JSON, tolerant of malformed content."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["CLOCK_SKEW_MS", "MatrixEvent", "MatrixEventKind", "event_from_raw"]

CLOCK_SKEW_MS = 2000
"""Events up to this much older than the daemon's start still count as new (homeserver clocks differ)."""


class MatrixEventKind(enum.StrEnum):
    """A coarse classification of an event's type."""

    MESSAGE = "message"
    REACTION = "reaction"
    REDACTION = "redaction"
    MEMBER = "member"
    OTHER = "other"


_KINDS = {
    "m.room.message": MatrixEventKind.MESSAGE,
    "m.reaction": MatrixEventKind.REACTION,
    "m.room.redaction": MatrixEventKind.REDACTION,
    "m.room.member": MatrixEventKind.MEMBER,
}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict_or_empty(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class MatrixEvent:
    """One room event as the homeserver sent it; `content` is raw, so callers validate what they read.

    `encrypted` is True for an event that arrived as `m.room.encrypted`: `type` and `content` are then
    the decrypted ones (or still `m.room.encrypted` and the ciphertext while its room key is missing).
    `prev_content` is a state event's content before it (`unsigned.prev_content`), None when there was none.
    `after_restore` is True for an encrypted event sent before the bot's lost crypto store came back from the key
    backup in this run, and read with the restored keys: it came while the bot could not read it.
    """

    room_id: str
    event_id: str
    sender: str
    type: str
    content: dict[str, Any]
    origin_server_ts: int
    state_key: str | None = None
    redacts_event_id: str | None = None
    encrypted: bool = False
    prev_content: dict[str, Any] | None = None
    after_restore: bool = False

    @property
    def kind(self) -> MatrixEventKind:
        """message / reaction / redaction / member / other."""
        return _KINDS.get(self.type, MatrixEventKind.OTHER)

    @property
    def body(self) -> str | None:
        """`content.body` when it is a string."""
        return _str_or_none(self.content.get("body"))

    @property
    def msgtype(self) -> str | None:
        """`content.msgtype` when it is a string."""
        return _str_or_none(self.content.get("msgtype"))

    @property
    def relation(self) -> dict[str, Any]:
        """`content["m.relates_to"]` when it is an object, else an empty dict."""
        return _dict_or_empty(self.content.get("m.relates_to"))

    @property
    def relation_type(self) -> str | None:
        """`rel_type` of the relation (`m.thread`, `m.replace`, `m.annotation`, ...)."""
        return _str_or_none(self.relation.get("rel_type"))

    @property
    def related_event_id(self) -> str | None:
        """The `event_id` the relation points at (thread root, edited or annotated event)."""
        return _str_or_none(self.relation.get("event_id"))

    @property
    def thread_root(self) -> str | None:
        """The thread root event id when this event is part of a thread."""
        return self.related_event_id if self.relation_type == "m.thread" else None

    @property
    def reply_to(self) -> str | None:
        """The `m.in_reply_to` event id, if any."""
        return _str_or_none(_dict_or_empty(self.relation.get("m.in_reply_to")).get("event_id"))

    @property
    def reaction_key(self) -> str | None:
        """The emoji (or other key) of an `m.annotation` relation."""
        return _str_or_none(self.relation.get("key")) if self.relation_type == "m.annotation" else None

    @property
    def membership(self) -> str | None:
        """`content.membership` of a member event."""
        return _str_or_none(self.content.get("membership")) if self.kind is MatrixEventKind.MEMBER else None

    @property
    def prev_membership(self) -> str | None:
        """`prev_content.membership` of a member event: the membership it replaced."""
        if self.kind is not MatrixEventKind.MEMBER or self.prev_content is None:
            return None
        return _str_or_none(self.prev_content.get("membership"))


def event_from_raw(
    room_id: str, raw: Any, *, encrypted: bool = False, after_restore: bool = False
) -> MatrixEvent | None:
    """Normalize one raw room event; None only when it lacks an event id, sender or type."""
    if not isinstance(raw, dict):
        return None
    event_id, sender, event_type = raw.get("event_id"), raw.get("sender"), raw.get("type")
    if not (isinstance(event_id, str) and isinstance(sender, str) and isinstance(event_type, str)):
        return None
    content = _dict_or_empty(raw.get("content"))
    timestamp = raw.get("origin_server_ts")
    # Servers put the replaced state's content in `unsigned`; older ones (and some APIs) at the top level.
    prev_content = _dict_or_none(_dict_or_empty(raw.get("unsigned")).get("prev_content"))
    if prev_content is None:
        prev_content = _dict_or_none(raw.get("prev_content"))
    redacts = _str_or_none(raw.get("redacts")) or (
        _str_or_none(content.get("redacts")) if event_type == "m.room.redaction" else None
    )
    return MatrixEvent(
        room_id=room_id,
        event_id=event_id,
        sender=sender,
        type=event_type,
        content=content,
        origin_server_ts=timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else 0,
        state_key=_str_or_none(raw.get("state_key")),
        redacts_event_id=redacts,
        encrypted=encrypted or event_type == "m.room.encrypted",
        prev_content=prev_content,
        after_restore=after_restore,
    )
