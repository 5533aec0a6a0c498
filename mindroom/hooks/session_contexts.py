"""Contexts of the 2026 API about stored conversations and room members: sessions, compaction, joins, leaves."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from mindroom.hooks.hook_context import HookContext
from mindroom.hooks.types import (
    EVENT_COMPACTION_BEFORE,
    EVENT_ROOM_MEMBER_JOINED,
    EVENT_ROOM_MEMBER_LEFT,
    EVENT_SESSION_STARTED,
)

__all__ = [
    "CompactionHookContext",
    "HistoryScope",
    "RoomMemberJoinedContext",
    "RoomMemberLeftContext",
    "SessionHookContext",
]


@dataclass(frozen=True, slots=True)
class HistoryScope:
    """Whose history a session is: one agent's, or a team's."""

    kind: Literal["agent", "team"]
    scope_id: str

    @property
    def key(self) -> str:
        """`<kind>:<scope_id>`."""
        return f"{self.kind}:{self.scope_id}"


def _agent_scope() -> HistoryScope:
    return HistoryScope("agent", "")


@dataclass(slots=True, kw_only=True)
class SessionHookContext(HookContext):
    """`session:started`: a run stored a session that did not exist before it (for a team, `agent_name` is the team)."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_SESSION_STARTED
    FROZEN: ClassVar[bool] = True

    agent_name: str = ""
    scope: HistoryScope = field(default_factory=_agent_scope)
    session_id: str = ""
    room_id: str = ""
    thread_id: str | None = None

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent (or team) and the room."""
        return self.agent_name, self.room_id


@dataclass(slots=True, kw_only=True)
class CompactionHookContext(HookContext):
    """`compaction:before` / `compaction:after`: stored messages folded into a summary.

    `messages` are the raw stored messages; every hook gets its own deep copy of them.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_COMPACTION_BEFORE
    FROZEN: ClassVar[bool] = True

    agent_name: str = ""
    scope: HistoryScope = field(default_factory=_agent_scope)
    room_id: str = ""
    thread_id: str | None = None
    messages: list[Any] = field(default_factory=list)
    session_id: str = ""
    token_count_before: int = 0
    token_count_after: int | None = None
    compaction_summary: str | None = None

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent (or team) and the room."""
        return self.agent_name, self.room_id

    def hook_copy(self) -> CompactionHookContext | None:
        """A copy with its own deep copy of `messages`; None when they cannot be copied (no hook then runs)."""
        try:
            messages = copy.deepcopy(self.messages)
        except Exception:  # a message holding something uncopyable: hooks must not share the originals
            return None
        view = self.clone()
        assert isinstance(view, CompactionHookContext)
        view.messages = messages
        return view


@dataclass(slots=True, kw_only=True)
class _RoomMemberContext(HookContext):
    """A person's membership change, seen by the router (`agent_name`); `correlation_id` is the event id."""

    FROZEN: ClassVar[bool] = True

    agent_name: str = ""
    room_id: str = ""
    event_id: str = ""
    user_id: str = ""
    sender_id: str = ""
    display_name: str | None = None
    avatar_url: str | None = None
    membership: str = ""
    prev_membership: str | None = None

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The router and the room."""
        return self.agent_name, self.room_id


@dataclass(slots=True, kw_only=True)
class RoomMemberJoinedContext(_RoomMemberContext):
    """`room:member_joined`: a person joined a room (profile changes do not count)."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_ROOM_MEMBER_JOINED


@dataclass(slots=True, kw_only=True)
class RoomMemberLeftContext(_RoomMemberContext):
    """`room:member_left`: a person left a room themself; name and avatar are from before they left."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_ROOM_MEMBER_LEFT
