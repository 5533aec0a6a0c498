"""What the Matrix tools (`matrix_message`, `matrix_room`, `matrix_api`) share: the agent's rooms and their rules.

A tool acts as the calling agent's own account, in a room that agent is in; a room other than the turn's
also needs the person the turn speaks for to be allowed to talk to the agent there. Content the model writes
may not carry the daemon's own keys (`com.mindroom.*`, `io.mindroom.*`: who a message speaks for, hops,
hand-offs), at any depth, so no tool call can make a message speak for someone else. Writes are rate limited
per agent and room.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.matrix.room_account import RoomAccount
from mindroom.tool_system.builtin.parts import RoomDesk, ToolCaller, daemon_parts, tool_caller
from mindroom.tool_system.spec import ToolError

__all__ = ["RESERVED_PREFIXES", "AgentRoom", "RateWindow", "agent_room", "reserved_key", "thread_argument"]

RESERVED_PREFIXES = ("com.mindroom.", "io.mindroom.")


@dataclass(frozen=True, slots=True)
class AgentRoom:
    """The calling agent's account, the room a call acts in, and who the call is for."""

    desk: RoomDesk
    client: RoomAccount
    caller: ToolCaller
    room_id: str

    @property
    def is_current(self) -> bool:
        """Whether the room is the turn's own."""
        return self.room_id == self.caller.room_id


def agent_room(room: str | None) -> AgentRoom:
    """The agent's account and the room `room` names (default: the turn's); `ToolError` outside its bounds."""
    caller = tool_caller()
    desk = daemon_parts().rooms
    if desk is None:
        raise ToolError("Matrix rooms are not available in this daemon")
    client = desk.client(caller.agent_name)
    if client is None:
        raise ToolError("your Matrix account is not running")
    room_id = desk.room_id(room) if room else caller.room_id
    if room_id not in desk.joined(caller.agent_name):
        raise ToolError(f"you are not in the room {room!r}")
    if room_id != caller.room_id and not desk.may_reach(caller.requester_id, room_id, caller.agent_name):
        raise ToolError("the person you act for may not use you in that room")
    return AgentRoom(desk, client, caller, room_id)


def reserved_key(value: Any) -> str | None:
    """The first key in `value` (at any depth) in the daemon's own namespaces, else None."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key).startswith(RESERVED_PREFIXES):
                return str(key)
            found = reserved_key(item)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for item in value:
            found = reserved_key(item)
            if found is not None:
                return found
    return None


def thread_argument(where: AgentRoom, thread_id: str | None, *, new_thread: bool = False) -> str | None:
    """The thread a call acts in: the turn's in its own room (unless `new_thread`), none for `"room"`."""
    if new_thread:
        if thread_id is not None:
            raise ToolError("use either new_thread=True or thread_id, not both")
        return None
    if thread_id == "room":
        return None
    if thread_id:
        return thread_id
    return where.caller.thread_id if where.is_current else None


class RateWindow:
    """At most `limit` weighted actions per `window_s` per (run of the daemon, agent, room)."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self._actions: dict[tuple[int, str, str], deque[float]] = {}

    def take(self, where: AgentRoom, weight: int = 1) -> None:
        """Count an action; `ToolError` when the window is full."""
        now = time.monotonic()
        key = (id(where.desk), where.caller.agent_name, where.room_id)
        recent = self._actions.setdefault(key, deque())
        while recent and now - recent[0] > self.window_s:
            recent.popleft()
        if len(recent) + weight > self.limit:
            raise ToolError(f"too many actions in this room: at most {self.limit} per {self.window_s:g} s")
        recent.extend([now] * weight)
