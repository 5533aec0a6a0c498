"""What a `RecordingClient` did, as typed records a test asserts on (`client.records`, in order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ApiRequest",
    "Record",
    "RoomChange",
    "SentEdit",
    "SentMessage",
    "SentReaction",
    "SentRedaction",
    "StateWrite",
    "TypingNotice",
]


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the client would have sent (`event_id` is the one it returned)."""

    room_id: str
    event_id: str
    body: str
    content: Mapping[str, Any]
    thread_root: str | None = None
    reply_to: str | None = None
    txn_id: str | None = None


@dataclass(frozen=True, slots=True)
class SentEdit:
    """An edit of `target_event_id` the client would have sent."""

    room_id: str
    event_id: str
    target_event_id: str
    body: str
    content: Mapping[str, Any]
    thread_root: str | None = None
    txn_id: str | None = None


@dataclass(frozen=True, slots=True)
class SentReaction:
    """A reaction the client would have sent."""

    room_id: str
    event_id: str
    target_event_id: str
    key: str


@dataclass(frozen=True, slots=True)
class SentRedaction:
    """A redaction the client would have sent."""

    room_id: str
    event_id: str
    target_event_id: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class TypingNotice:
    """A typing notice shown (`on`) or cleared."""

    room_id: str
    on: bool


@dataclass(frozen=True, slots=True)
class StateWrite:
    """A room state event the client would have set."""

    room_id: str
    event_type: str
    state_key: str
    content: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RoomChange:
    """The client joined or left a room (accepting or rejecting an invite is one of these)."""

    room_id: str
    change: Literal["joined", "left"]


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """A raw client-API request."""

    method: str
    path: str
    body: Any


Record = SentMessage | SentEdit | SentReaction | SentRedaction | TypingNotice | StateWrite | RoomChange | ApiRequest
"""Anything a recording client did, in the order it did it."""
