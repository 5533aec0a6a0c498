"""An agent's `tools:` entries in MindRoom's shapes: a bare name, `name: {settings}`, or `{name, overrides, ...}`.

```yaml
tools:
  - shell                                  # a bare name
  - duckduckgo: {fixed_max_results: 5}     # name -> settings for this agent
  - {name: mcp_time, overrides: {call_timeout_seconds: 10}}
```

`defer` and `initial` (MindRoom's dynamic tool loading) are accepted in both mapping forms and lifted out
of the settings; every tool's schema is sent to the model here, so they change nothing. Names are trimmed,
must not be empty and must be unique in one list; `initial` needs `defer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["CONTROL_KEYS", "INHERIT", "ToolEntry", "merged_entries", "parse_tool_entries"]

CONTROL_KEYS = frozenset({"defer", "initial"})
INHERIT = "__MINDROOM_INHERIT__"
"""As an agent's setting: drop that one setting inherited from `defaults.tools`."""
_EXPLICIT_KEYS = frozenset({"name", "overrides", "defer", "initial"})
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One `tools:` entry: the tool's name and this agent's settings for it."""

    name: str
    overrides: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    defer: bool = False
    initial: bool = False


def _flag(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        msg = f"{where}: {key} must be true or false"
        raise ValueError(msg)
    return value


def _overrides(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        msg = f"{where}: the settings of a tool must be a mapping, not {type(value).__name__}"
        raise ValueError(msg)
    bad = sorted(str(key) for key in value if not isinstance(key, str))
    if bad:
        msg = f"{where}: setting names must be strings, not {bad}"
        raise ValueError(msg)
    return dict(value)


def _one(raw: Any, where: str) -> ToolEntry:
    if isinstance(raw, str):
        name, settings, flags = raw, {}, {}
    elif isinstance(raw, Mapping) and "name" in raw:
        unknown = sorted(set(map(str, raw)) - _EXPLICIT_KEYS)
        if unknown:
            msg = f"{where}: unknown keys {unknown} (allowed: name, overrides, defer, initial)"
            raise ValueError(msg)
        settings = _overrides(raw.get("overrides"), where)
        inside = sorted(CONTROL_KEYS & set(settings))
        if inside:
            msg = f"{where}: {', '.join(inside)} belong beside `overrides`, not inside it"
            raise ValueError(msg)
        name, flags = raw["name"], {key: raw[key] for key in CONTROL_KEYS if key in raw}
    elif isinstance(raw, Mapping) and len(raw) == 1:
        [(name, value)] = raw.items()
        settings = _overrides(value, where)
        flags = {key: settings.pop(key) for key in CONTROL_KEYS if key in settings}
    else:
        msg = f"{where}: a tool is a name, a single `name: {{settings}}` mapping, or {{name: ..., overrides: ...}}"
        raise ValueError(msg)
    if not isinstance(name, str) or not name.strip():
        msg = f"{where}: a tool name must be a non-empty string"
        raise ValueError(msg)
    defer = _flag(flags.get("defer", False), "defer", where)
    initial = _flag(flags.get("initial", False), "initial", where)
    if initial and not defer:
        msg = f"{where}: initial: true needs defer: true"
        raise ValueError(msg)
    return ToolEntry(name.strip(), MappingProxyType(settings), defer, initial)


def parse_tool_entries(raw: Any, where: str = "tools") -> tuple[ToolEntry, ...]:
    """The entries of a `tools:` list (`ValueError` naming the entry for a bad one, or a name given twice)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        msg = f"{where} must be a list"
        raise ValueError(msg)
    entries = tuple(_one(item, f"{where}[{index}]") for index, item in enumerate(raw))
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            msg = f"{where}: the tool {entry.name!r} is listed twice (duplicate agent tools are not allowed)"
            raise ValueError(msg)
        seen.add(entry.name)
    return entries


def merged_entries(own: tuple[ToolEntry, ...], defaults: tuple[ToolEntry, ...]) -> tuple[ToolEntry, ...]:
    """An agent's entries with `defaults.tools` added: a default the agent also lists gives its settings
    first, the agent's win field by field (`__MINDROOM_INHERIT__` drops an inherited one)."""
    inherited = {entry.name: entry for entry in defaults}
    merged: list[ToolEntry] = []
    for entry in own:
        base = inherited.pop(entry.name, None)
        if base is None:
            merged.append(entry)
            continue
        settings = {**base.overrides, **entry.overrides}
        settings = {key: value for key, value in settings.items() if value != INHERIT}
        merged.append(ToolEntry(entry.name, MappingProxyType(settings), entry.defer or base.defer, entry.initial))
    return (*merged, *inherited.values())
