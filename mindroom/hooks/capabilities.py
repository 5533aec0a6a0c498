"""What the daemon binds to hook contexts: typed shapes of the Matrix send, state and admin helpers.

The daemon's message sender takes `(room_id, text, thread_id=None, extra_content=None)`; plugins of the
2026 API call the raw `ctx.message_sender` as `(room_id, body, thread_id, source_hook, extra_content, *,
trigger_dispatch=False)`. `RelaySender` accepts both and hands the daemon the first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mindroom.constants import HOOK_DISPATCH_KEY, HOOK_SOURCE_KEY, SYNTHETIC_DEPTH_KEY

__all__ = [
    "AgentMessageSnapshot",
    "AgentMessageSnapshotReader",
    "HookMatrixAdmin",
    "HookMessageSender",
    "HookRoomStatePutter",
    "HookRoomStateQuerier",
    "RelaySender",
]


class HookMessageSender(Protocol):
    """The raw sender behind `ctx.send_message`, as the 2026 API calls it."""

    def __call__(
        self,
        room_id: str,
        body: str,
        thread_id: str | None,
        source_hook: str | None,
        extra_content: dict[str, Any] | None,
        *,
        trigger_dispatch: bool = False,
    ) -> Awaitable[str | None]:
        """Post `body` and return its event id, or None when it was not sent."""


class HookRoomStateQuerier(Protocol):
    """The raw reader behind `ctx.query_room_state`."""

    def __call__(self, room_id: str, event_type: str, state_key: str | None) -> Awaitable[dict[str, Any] | None]:
        """One event's content (with `state_key`) or `{state_key: content}`; None on a Matrix error."""


class HookRoomStatePutter(Protocol):
    """The raw writer behind `ctx.put_room_state`."""

    def __call__(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> Awaitable[bool]:
        """Write one state event; False on a Matrix error."""


@runtime_checkable
class HookMatrixAdmin(Protocol):
    """Room administration as the router account; every method but `retain_room` is async.

    Network errors propagate to the hook. `get_room_state_event` answers `(True, content)` when found,
    `(True, None)` when the homeserver says the event does not exist, `(False, None)` on any other failure.
    """

    async def get_joined_rooms(self) -> list[str] | None:
        """The rooms the router is in."""

    async def resolve_alias(self, alias: str) -> str | None:
        """The room id of an alias, or None."""

    async def create_room(
        self,
        *,
        name: str,
        alias_localpart: str | None = None,
        topic: str | None = None,
        power_user_ids: list[str] | None = None,
    ) -> str | None:
        """Create a room (power and invites for `power_user_ids`), keep it, and return its id."""

    def retain_room(self, room_id: str) -> None:
        """Record locally that the daemon owns the room, so cleanup and restarts keep it."""

    async def invite_user(self, room_id: str, user_id: str) -> bool:
        """Invite a user."""

    async def force_join_user(self, room_id: str, user_id: str) -> bool:
        """Invite, then join the user through the homeserver's admin API."""

    async def kick_user(self, room_id: str, user_id: str, *, reason: str | None = None) -> bool:
        """Remove a user from a room."""

    async def get_room_members(self, room_id: str) -> set[str] | None:
        """The joined members of a room."""

    async def get_profile_avatar(self, user_id: str) -> str | None:
        """A user's avatar URL."""

    async def get_room_state_event(
        self, room_id: str, event_type: str, state_key: str
    ) -> tuple[bool, dict[str, Any] | None]:
        """One state event, with whether the homeserver answered."""

    async def add_room_to_space(self, space_room_id: str, room_id: str) -> bool:
        """Make a room a child of a space."""

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> bool:
        """Write one state event."""


@dataclass(frozen=True, slots=True)
class AgentMessageSnapshot:
    """The newest visible message of one sender in one conversation: its content and server timestamp (ms)."""

    content: dict[str, Any]
    origin_server_ts: int


AgentMessageSnapshotReader = Callable[[str, str, str | None], Awaitable[AgentMessageSnapshot | None]]
"""`(room_id, sender, thread_id)`: reads local conversation data only; `thread_id=None` is the room level."""

_DaemonSender = Callable[..., Awaitable[Any]]


class RelaySender:
    """A daemon message sender that also takes the 2026 raw-call shape.

    A call with a `source_hook` (fourth positional or keyword) or `trigger_dispatch` is the 2026 shape:
    its hook source, a synthetic depth of 1 (a plugin's own hop, as `ctx.send_message` marks it) and the
    dispatch flag go into the event content the daemon's sender reads. Anything else passes through.
    """

    __slots__ = ("sender",)

    def __init__(self, sender: _DaemonSender) -> None:
        self.sender = sender

    async def __call__(self, room_id: str, text: str, *args: Any, **kwargs: Any) -> Any:
        """Send through the daemon, translating a 2026-shaped call."""
        newer = "source_hook" in kwargs or "trigger_dispatch" in kwargs or len(args) >= 3
        if not newer and len(args) == 2 and isinstance(args[1], str):
            newer = True  # (thread_id, source_hook) with extra_content left out
        if not newer:
            return await self.sender(room_id, text, *args, **kwargs)
        return await self._newer(room_id, text, *args, **kwargs)

    async def _newer(
        self,
        room_id: str,
        text: str,
        thread_id: str | None = None,
        source_hook: str | None = None,
        extra_content: dict[str, Any] | None = None,
        *,
        trigger_dispatch: bool = False,
    ) -> Any:
        content = dict(extra_content or {})
        if source_hook:
            content.setdefault(HOOK_SOURCE_KEY, source_hook)
        content.setdefault(SYNTHETIC_DEPTH_KEY, 1)
        if trigger_dispatch:
            content[HOOK_DISPATCH_KEY] = True
        return await self.sender(room_id, text, thread_id=thread_id, extra_content=content)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RelaySender):
            return bool(self.sender == other.sender)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.sender)

    def __repr__(self) -> str:
        return f"RelaySender({self.sender!r})"
