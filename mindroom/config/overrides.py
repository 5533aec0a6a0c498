"""Settings changed from chat: each `Override` names what it overrides; `ChatSettings` is all of them at once.

`config.yaml` stays the source. An override is one of:

- `config` scope: a key path of `config.yaml` (`defaults.num_history_runs`, `agents.helper.instructions`) and
  its new value, applied to the document before it is validated (`apply_config_overrides`); only the keys
  `mindroom.config.chat_settable` lists, and one kept from before that falls outside them is passed over;
- `room` scope (a Matrix room id): `model` for every agent, team and the router there, `thread_mode`,
  `voice_replies` (true or false: voice messages answered in voice too), or `instructions:<agent>`, extra
  instructions of one agent there;
- `thread` scope (a room id and a thread root): `model` or `instructions:<agent>` in that thread only.

A turn picks its model thread first, then room, then `room_models`, then the entity's own (`model_name`);
an override naming a model that is gone is passed over.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from mindroom.config.chat_settable import chat_leaves, chat_refusal, missing_entry, parse_key_path
from mindroom.config.main import ThreadMode
from mindroom.logging_config import redact_value

__all__ = [
    "ChatSettings",
    "Override",
    "OverrideScope",
    "apply_config_overrides",
    "parse_key_path",
    "scoped_problems",
]

OverrideScope = Literal["config", "room", "thread"]


@dataclass(frozen=True, slots=True)
class Override:
    """One setting changed from chat: where (scope, room, thread), what (`key`), its value, who set it and when."""

    scope: OverrideScope
    key: str
    value: Any
    set_by: str
    set_at: float
    room_id: str = ""
    thread_id: str = ""

    @property
    def slot(self) -> tuple[str, str, str, str]:
        """What it overrides: a second override of the same slot replaces the first."""
        return (self.scope, self.room_id, self.thread_id, self.key)

    def describe(self) -> str:
        """One line naming what it overrides and where (for `!config` and `mindroom doctor`)."""
        where = {"config": "config.yaml", "room": f"room {self.room_id}", "thread": f"thread {self.thread_id}"}
        name = self.key.rsplit(".", 1)[-1]  # a value under a name like `api_key` is shown blanked
        return f"{self.key} = {redact_value({name: self.value})[name]!r} ({where[self.scope]}; set by {self.set_by})"


def _set(node: Any, path: tuple[str | int, ...], value: Any, where: str) -> None:
    for depth, part in enumerate(path[:-1]):
        child = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, list) and isinstance(part, int) and part < len(node):
            child = node[part]
        if child is None and isinstance(node, dict):
            child = node[part] = {}
        if not isinstance(child, dict | list):
            msg = f"{where}: {'.'.join(map(str, path[: depth + 1]))} holds no keys to set"
            raise ValueError(msg)
        node = child
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last <= len(node):
        node[last:last + 1] = [value]  # fmt: skip
    else:
        msg = f"{where}: no such list entry"
        raise ValueError(msg)


def apply_config_overrides(document: Mapping[str, Any], overrides: Iterable[Override]) -> dict[str, Any]:
    """A copy of the config document with each `config`-scope override's value set at its key path (a mapping
    set at a parent key sets each of its leaves; the keys it leaves out keep the document's values).

    ValueError when chat may not set the key (`chat_settable`), when it names an agent or team the document
    lacks, or when a path cannot be set (it crosses a value that is not a mapping or a list).
    """
    result = copy.deepcopy(dict(document))
    for override in overrides:
        if override.scope != "config":
            continue
        for path, value in chat_leaves(override.key, override.value):
            missing = missing_entry(path, result)
            if missing is not None:
                raise ValueError(missing)
            _set(result, path, copy.deepcopy(value), override.key)
    return result


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """Every override in force: a value of the live state, replaced whole when one changes."""

    overrides: tuple[Override, ...] = ()
    _by_slot: dict[tuple[str, str, str, str], Override] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_slot", {override.slot: override for override in self.overrides})

    def with_override(self, override: Override) -> ChatSettings:
        """These settings with `override` in its slot."""
        kept = tuple(item for item in self.overrides if item.slot != override.slot)
        return ChatSettings((*kept, override))

    def without(self, slot: tuple[str, str, str, str]) -> ChatSettings:
        """These settings without the override of `slot`."""
        return ChatSettings(tuple(item for item in self.overrides if item.slot != slot))

    def get(self, scope: OverrideScope, key: str, room_id: str = "", thread_id: str = "") -> Override | None:
        """The override of one slot, if set."""
        return self._by_slot.get((scope, room_id, thread_id, key))

    def at(self, slot: tuple[str, str, str, str]) -> Override | None:
        """The override of `slot` (scope, room, thread, key), if set."""
        return self._by_slot.get(slot)

    def config_overrides(self) -> tuple[Override, ...]:
        """The `config`-scope overrides chat may make, oldest first (applied in that order)."""
        return tuple(
            item for item in self.overrides if item.scope == "config" and not chat_refusal(item.key, item.value)
        )

    def passed_over(self) -> tuple[Override, ...]:
        """The `config`-scope overrides kept from before that chat may not make: never applied."""
        return tuple(item for item in self.overrides if item.scope == "config" and chat_refusal(item.key, item.value))

    def thread_mode(self, room_id: str) -> str | None:
        """The room's thread mode set from chat, if any."""
        found = self.get("room", "thread_mode", room_id)
        return str(found.value) if found is not None else None

    def instructions(self, agent: str, room_id: str, thread_id: str | None) -> tuple[str, ...]:
        """Extra instructions of `agent` here: the room's, then the thread's."""
        key = f"instructions:{agent}"
        found = [self.get("room", key, room_id), self.get("thread", key, room_id, thread_id or "")]
        return tuple(line for item in found if item is not None for line in item.value)

    def model_name(
        self,
        models: Mapping[str, Any],
        room_models: Mapping[str, str],
        own: str,
        room_id: str,
        thread_id: str | None,
        room_keys: Sequence[str] | AbstractSet[str] = (),
    ) -> str:
        """The model a turn here uses: thread override, room override, `room_models`, else the entity's `own`."""
        for override in (self.get("thread", "model", room_id, thread_id or ""), self.get("room", "model", room_id)):
            if override is not None and override.value in models:
                return str(override.value)
        for key in sorted(room_keys):
            if key in room_models:
                return room_models[key]
        return own


def scoped_problems(override: Override, models: Collection[str], entities: Collection[str]) -> list[str]:
    """What is wrong with a `room` or `thread` override, checked as config checks the same kind of value."""
    key, value = override.key, override.value
    if key == "model":
        if value in models:
            return []
        return [f"unknown model {value!r} (known: {', '.join(sorted(models)) or 'none'})"]
    if key == "thread_mode" and override.scope == "room":
        try:
            TypeAdapter(ThreadMode).validate_python(value)
        except ValidationError:
            return [f"thread_mode: {value!r} is neither 'thread' nor 'room'"]
        return []
    if key == "voice_replies" and override.scope == "room":
        return [] if isinstance(value, bool) else [f"voice_replies: {value!r} is neither true nor false"]
    if key.startswith("instructions:"):
        entity = key.partition(":")[2]
        if entity not in entities:
            return [f"unknown agent or team {entity!r} (known: {', '.join(entities) or 'none'})"]
        try:
            TypeAdapter(list[str]).validate_python(value)
        except ValidationError:
            return ["instructions must be text"]
        return []
    return [f"{key!r} cannot be set for a {override.scope}"]
