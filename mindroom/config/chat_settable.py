"""The `config.yaml` keys chat may change: one table of key-path patterns and the check every change from chat
goes through (`!config set`, the overrides the state keeps, and any tool that changes config for a person).

Chat changes behaviour only: which of the operator's models answers, instructions, roles, display names,
history, streaming and Markdown, thread mode. Endpoints, paths, commands, programs, sandboxes, network,
plugins, scripts, credentials, environment variables, who may do what, rooms, storage, memory and knowledge
backends, MCP servers, tool approval, tools and the definitions under `models:` stay the operator's: they
are written in `config.yaml` and the environment, never from chat.

A pattern is a dot path in which `*` stands for one name. A `*` inside a path names an entry `config.yaml`
already has (chat changes the operator's agents and teams, it never adds one); a `*` at the end may be a new
key (`room_models.<room>`). A list index is never settable (a list is set whole). A mapping set at a parent
(`defaults: {markdown: false}`) sets each of its leaves, and only when every one of them is in the table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["CHAT_SETTABLE", "chat_leaves", "chat_refusal", "missing_entry", "parse_key_path"]

CHAT_SETTABLE: tuple[str, ...] = (
    "agents.*.display_name",
    "agents.*.role",
    "agents.*.instructions",
    "agents.*.model",
    "agents.*.thread_mode",
    "agents.*.enable_streaming",
    "agents.*.markdown",
    "agents.*.num_history_runs",
    "teams.*.display_name",
    "teams.*.role",
    "teams.*.model",
    "teams.*.mode",
    "teams.*.enable_streaming",
    "teams.*.markdown",
    "teams.*.num_history_runs",
    "teams.*.member_timeout_seconds",
    "router.display_name",
    "router.model",
    "room_models.*",
    "defaults.enable_streaming",
    "defaults.markdown",
    "defaults.num_history_runs",
    "defaults.history_token_budget",
    "defaults.streaming_edit_interval_ms",
    "defaults.thread_mode",
    "timezone",
)
"""Every key path chat may set; anything else is refused (and a stored override of it is passed over)."""

_WHY = "endpoints, paths, commands, plugins, sandboxes and credentials are the operator's; edit config.yaml"
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_PATTERNS = tuple(tuple(pattern.split(".")) for pattern in CHAT_SETTABLE)

_KeyPath = tuple[str | int, ...]


def parse_key_path(path: str) -> _KeyPath:
    """`agents.helper.rooms[0]` or `agents.helper.rooms.0` -> `("agents", "helper", "rooms", 0)`; ValueError if odd."""
    parts: list[str | int] = []
    for piece in path.strip().split("."):
        found = list(_PART.finditer(piece))
        if not piece or "".join(match.group(0) for match in found) != piece:
            msg = f"not a key path: {path!r} (write it as models.default.id or agents.helper.rooms[0])"
            raise ValueError(msg)
        for match in found:
            name, index = match.groups()
            parts.append(int(index) if index is not None else int(name) if name.isdigit() else name)
    return tuple(parts)


def _fits(parts: _KeyPath, pattern: tuple[str, ...]) -> bool:
    return len(parts) == len(pattern) and all(
        isinstance(part, str) and want in ("*", part) for part, want in zip(parts, pattern, strict=True)
    )


def _pattern_of(parts: _KeyPath) -> tuple[str, ...] | None:
    return next((pattern for pattern in _PATTERNS if _fits(parts, pattern)), None)


def _is_parent(parts: _KeyPath) -> bool:
    return any(len(parts) < len(pattern) and _fits(parts, pattern[: len(parts)]) for pattern in _PATTERNS)


def _walk(parts: _KeyPath, text: str, value: Any, leaves: list[tuple[_KeyPath, Any]], refused: list[str]) -> None:
    if _pattern_of(parts) is not None:
        leaves.append((parts, value))
    elif _is_parent(parts) and isinstance(value, dict) and value and all(isinstance(key, str) for key in value):
        for name, item in value.items():
            _walk((*parts, name), f"{text}.{name}", item, leaves, refused)
    else:
        refused.append(text)


def chat_leaves(key: str, value: Any) -> tuple[tuple[_KeyPath, Any], ...]:
    """The key paths that setting `key` to `value` from chat sets, with their values (one, or each leaf of a
    mapping set at a parent); ValueError naming the key chat may not change, and why."""
    parts = parse_key_path(key)
    leaves: list[tuple[_KeyPath, Any]] = []
    refused: list[str] = []
    _walk(parts, key.strip(), value, leaves, refused)
    if not refused:
        return tuple(leaves)
    if refused == [key.strip()]:
        msg = f"`{key.strip()}` cannot be changed from chat: {_WHY}"
    else:
        names = ", ".join(f"`{name}`" for name in refused)
        msg = f"`{key.strip()}` cannot be changed from chat: it sets {names}; {_WHY}"
    raise ValueError(msg)


def chat_refusal(key: str, value: Any) -> str | None:
    """Why chat may not set `key` to `value`, or None when it may (the table alone; see `missing_entry`)."""
    try:
        chat_leaves(key, value)
    except ValueError as error:
        return str(error)
    return None


def missing_entry(parts: _KeyPath, document: Mapping[str, Any]) -> str | None:
    """What a settable leaf names inside its path that `document` (config.yaml) lacks: chat never adds an
    agent or a team. None when every name inside the path exists."""
    pattern = _pattern_of(parts)
    node: Any = document
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part) if isinstance(node, Mapping) else None
        if pattern is not None and pattern[depth] == "*" and child is None:
            where = ".".join(map(str, parts[:depth]))
            return f"`{'.'.join(map(str, parts))}`: config.yaml has no {where} entry {part!r}; chat never adds one"
        node = child
    return None
