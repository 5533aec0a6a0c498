"""Per-room hook policy: a room's administrators turn a plugin, or one of its hooks, off (or back on) there.

The policy is the room state event `com.mindroom.hooks.policy` (state key `""`)::

    {"plugins": {"audit": false}, "hooks": {"audit": {"keep_this_one": true}}}

`plugins` maps a plugin's name to on (`true`) or off (`false`); `hooks` maps a plugin's name to its hooks' names,
each on or off, and a hook's own entry wins over its plugin's. Names absent stay as the config has them; a room
cannot turn on a hook the config turned off. The event counts only when its sender is still joined and holds the
power level the operator set (`defaults.hooks_room_policy_power_level`, 100 unless set); a plugin whose config
entry says `room_policy: fixed` is left as configured whatever the room says.

`RoomHookPolicies` keeps the rooms' state as the bots read it at start and as state events arrive, and holds only
the rooms whose policy counts, so a room without one costs dispatch one dict lookup and never a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindroom.logging_config import get_logger

__all__ = [
    "DEFAULT_POLICY_POWER_LEVEL",
    "POLICY_EVENT_TYPE",
    "RoomHookPolicies",
    "RoomHookPolicy",
    "StateEventLike",
    "sender_power",
]

logger = get_logger(__name__)

POLICY_EVENT_TYPE = "com.mindroom.hooks.policy"
DEFAULT_POLICY_POWER_LEVEL = 100
_POWER_LEVELS = "m.room.power_levels"
_MEMBER = "m.room.member"
_CREATE = "m.room.create"
_WATCHED = frozenset({POLICY_EVENT_TYPE, _POWER_LEVELS, _MEMBER, _CREATE})
_FILTERED_KEEP = 256


class StateEventLike(Protocol):
    """What the policy reads of a room state event (`mindroom.matrix.MatrixEvent` has it)."""

    @property
    def room_id(self) -> str:
        """The room the event is in."""

    @property
    def type(self) -> str:
        """The event's type."""

    @property
    def state_key(self) -> str | None:
        """The state key (None: not a state event)."""

    @property
    def sender(self) -> str:
        """Who sent it."""

    @property
    def content(self) -> dict[str, Any]:
        """The event's content, as sent."""


def sender_power(user_id: str, power_levels: Mapping[str, Any] | None, creator: str | None) -> int:
    """`user_id`'s power level by the room's `m.room.power_levels` (without one: the creator 100, others 0)."""
    if power_levels is None:
        return 100 if user_id == creator else 0
    users = power_levels.get("users")
    level = users.get(user_id) if isinstance(users, dict) else None
    if level is None:
        level = power_levels.get("users_default", 0)
    return level if isinstance(level, int) and not isinstance(level, bool) else 0


def _switches(value: Any) -> dict[str, bool]:
    """The name -> bool entries of a mapping; anything else in it is ignored."""
    if not isinstance(value, dict):
        return {}
    return {name: flag for name, flag in value.items() if isinstance(name, str) and isinstance(flag, bool)}


@dataclass(frozen=True, slots=True, eq=False)
class RoomHookPolicy:
    """One room's policy that counts: which plugins and hooks it turns off or on, and who set it."""

    sender: str
    plugins: Mapping[str, bool]
    hooks: Mapping[tuple[str, str], bool]
    _filtered: dict[int, tuple[Any, tuple[Any, ...]]] = field(default_factory=dict)

    @classmethod
    def from_content(cls, sender: str, content: Mapping[str, Any]) -> RoomHookPolicy:
        """Read the event's content; entries of the wrong shape are ignored."""
        hooks: dict[tuple[str, str], bool] = {}
        raw_hooks = content.get("hooks")
        if isinstance(raw_hooks, dict):
            for plugin, switches in raw_hooks.items():
                if isinstance(plugin, str):
                    hooks.update({(plugin, hook): flag for hook, flag in _switches(switches).items()})
        return cls(sender, _switches(content.get("plugins")), hooks)

    def runs(self, plugin_name: str, hook_name: str, fixed: frozenset[str]) -> bool:
        """Whether this room lets the hook run (a `fixed` plugin always runs as configured)."""
        if plugin_name in fixed:
            return True
        flag = self.hooks.get((plugin_name, hook_name))
        if flag is None:
            flag = self.plugins.get(plugin_name, True)
        return flag

    def filter(self, hooks: tuple[Any, ...], fixed: frozenset[str]) -> tuple[Any, ...]:
        """The hooks of `hooks` (a registry's memoized tuple) this room lets run; memoized per tuple."""
        hit = self._filtered.get(id(hooks))
        if hit is not None and hit[0] is hooks:
            return hit[1]
        kept = tuple(hook for hook in hooks if self.runs(hook.plugin_name, hook.hook_name, fixed))
        if len(self._filtered) >= _FILTERED_KEEP:
            self._filtered.clear()
        self._filtered[id(hooks)] = (hooks, kept)
        return kept

    @property
    def empty(self) -> bool:
        """True when it names nothing (so it changes nothing)."""
        return not self.plugins and not self.hooks


@dataclass(slots=True)
class _RoomState:
    """What the policy needs of one room's state."""

    policy: tuple[str, dict[str, Any]] | None = None
    power_levels: dict[str, Any] | None = None
    creator: str | None = None
    sender_joined: bool = True


class RoomHookPolicies:
    """Every room's hook policy, kept from the room state the bots read; `rooms` holds those that count."""

    __slots__ = ("_pending", "_state", "required_level", "rooms")

    def __init__(self, required_level: int = DEFAULT_POLICY_POWER_LEVEL) -> None:
        # Keyed `str | None` so dispatch looks up an event of no room without a test first.
        self.rooms: dict[str | None, RoomHookPolicy] = {}
        self.required_level = required_level
        self._state: dict[str, _RoomState] = {}
        # Rooms being read: the state events noted meanwhile, applied again over what the read returns.
        self._pending: dict[str, list[StateEventLike]] = {}

    def set_required_level(self, level: int) -> None:
        """The power level a policy's sender needs (from config; a change re-reads every room's policy)."""
        if level != self.required_level:
            self.required_level = level
            for room_id in list(self._state):
                self._settle(room_id)

    def known(self, room_id: str) -> bool:
        """Whether the room's state was read (or is being read)."""
        return room_id in self._state

    def claim(self, room_id: str) -> bool:
        """True once per room never seen: the caller then reads its state (`load`), so no room is read twice."""
        if room_id in self._state:
            return False
        self._state[room_id] = _RoomState()
        self._pending[room_id] = []
        return True

    def forget(self, room_id: str) -> None:
        """A read that failed: the room is as never seen, so its next policy event or join reads it again."""
        self._state.pop(room_id, None)
        self._pending.pop(room_id, None)
        self.rooms.pop(room_id, None)

    def load(self, room_id: str, events: Iterable[Any]) -> None:
        """A room's full state (the homeserver's `/state` list): its policy, power levels and members."""
        state = _RoomState()
        joined: set[str] = set()
        for raw in events:
            if not isinstance(raw, dict) or not isinstance(raw.get("state_key"), str):
                continue
            kind, content, sender = raw.get("type"), raw.get("content"), raw.get("sender")
            content = content if isinstance(content, dict) else {}
            if kind == POLICY_EVENT_TYPE and raw["state_key"] == "" and isinstance(sender, str):
                state.policy = (sender, content)
            elif kind == _POWER_LEVELS and raw["state_key"] == "":
                state.power_levels = content
            elif kind == _CREATE:
                state.creator = content.get("creator") if isinstance(content.get("creator"), str) else sender
            elif kind == _MEMBER and content.get("membership") == "join":
                joined.add(raw["state_key"])
        state.sender_joined = state.policy is not None and state.policy[0] in joined
        self._state[room_id] = state
        for event in self._pending.pop(room_id, ()):
            _apply(state, event)
        self._settle(room_id)

    def note(self, event: StateEventLike) -> bool:
        """A state event a bot received: a policy, power levels, or the policy sender's membership, changes it.

        True when the event is a policy in a room whose state was never read: the caller reads it (`load`)."""
        kind = event.type
        if kind not in _WATCHED:
            return False
        room_id = event.room_id
        state = self._state.get(room_id)
        unread = state is None
        if state is None:
            if kind != POLICY_EVENT_TYPE or event.state_key != "":
                return False  # a room with no policy seen: nothing to keep
            state = self._state[room_id] = _RoomState()
            self._pending[room_id] = []
        pending = self._pending.get(room_id)
        if pending is not None:
            pending.append(event)
        if _apply(state, event):
            self._settle(room_id)
        return unread

    def _settle(self, room_id: str) -> None:
        state = self._state[room_id]
        before = self.rooms.pop(room_id, None)
        if state.policy is None:
            return
        sender, content = state.policy
        policy = RoomHookPolicy.from_content(sender, content)
        power = sender_power(sender, state.power_levels, state.creator)
        if not state.sender_joined or power < self.required_level:
            logger.info(
                "room hook policy ignored",
                room_id=room_id,
                sender=sender,
                joined=state.sender_joined,
                power=power,
                required=self.required_level,
            )
            return
        if policy.empty:
            return
        self.rooms[room_id] = policy
        if before is None or before.plugins != policy.plugins or before.hooks != policy.hooks:
            logger.info("room hook policy in force", room_id=room_id, sender=sender, plugins=dict(policy.plugins))

    def describe(self, room_id: str, fixed: frozenset[str]) -> list[str]:
        """Lines for `!hooks` in a room: what its policy turns off or on, and what it cannot change."""
        state = self._state.get(room_id)
        if state is None or state.policy is None:
            return []
        policy = self.rooms.get(room_id)
        if policy is None:
            who, needed = state.policy[0], self.required_level
            return [f"Room policy from {who} is ignored: not joined, or below power level {needed}."]
        lines = [f"Room policy (set by {policy.sender}):"]
        for plugin, flag in sorted(policy.plugins.items()):
            note = " (fixed by config: ignored)" if plugin in fixed else ""
            lines.append(f"- plugin {plugin}: {'on' if flag else 'off'}{note}")
        for (plugin, hook), flag in sorted(policy.hooks.items()):
            note = " (fixed by config: ignored)" if plugin in fixed else ""
            lines.append(f"- hook {plugin}.{hook}: {'on' if flag else 'off'}{note}")
        return lines


def _apply(state: _RoomState, event: StateEventLike) -> bool:
    """Bring `state` up to one state event; True when it changed what the policy depends on."""
    kind = event.type
    content = event.content if isinstance(event.content, dict) else {}
    if kind == POLICY_EVENT_TYPE and event.state_key == "":
        # The homeserver took the event, so its sender was joined when it was sent.
        state.policy, state.sender_joined = (event.sender, content), True
    elif kind == _POWER_LEVELS and event.state_key == "":
        state.power_levels = content
    elif kind == _CREATE:
        state.creator = content.get("creator") if isinstance(content.get("creator"), str) else event.sender
    elif kind == _MEMBER and state.policy is not None and event.state_key == state.policy[0]:
        state.sender_joined = content.get("membership") == "join"
    else:
        return False
    return True
