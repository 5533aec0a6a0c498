"""The `todo` tool's state: one work plan per conversation, a JSON file under the data directory.

`<data>/todo/threads/<key>/todos.json` holds one conversation's items (the key is the room and thread, made
safe as a file name and unique by a digest). Every change reads, changes and replaces the file whole under
one lock (a change that returns `NoWrite` is not written), so two agents working in one thread never lose
each other's changes. Files are private (0600, in 0700 folders).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mindroom.private_files import private_dir

__all__ = [
    "PRIORITIES",
    "STATUSES",
    "TERMINAL_STATUSES",
    "NoWrite",
    "is_actionable",
    "is_blocked",
    "read_plan",
    "todos_path",
    "update_plan",
    "would_cycle",
]

_T = TypeVar("_T")
PRIORITIES = {"critical": 0, "high": 1, "medium": 2, "low": 3}
STATUSES = ("open", "done", "cancelled")
TERMINAL_STATUSES = frozenset({"done", "cancelled"})
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class NoWrite:
    """What a change returns when nothing is to be written (its value is the answer)."""

    value: Any


def _slug(value: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", value)).strip("_")[:40]


def todos_path(storage_root: Path, room_id: str, thread_id: str | None) -> Path:
    """Where one conversation's work plan is kept."""
    thread = thread_id or "main"
    digest = hashlib.sha256(f"{room_id}\0{thread}".encode()).hexdigest()[:16]
    key = f"{_slug(room_id) or 'room'}_{_slug(thread) or 'thread'}_{digest}"
    return Path(storage_root) / "todo" / "threads" / key / "todos.json"


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        msg = f"{path}: a work plan must be a JSON object"
        raise TypeError(msg)
    return loaded


def read_plan(path: Path) -> dict[str, Any]:
    """The work plan at `path` (empty when there is none yet)."""
    with _LOCK:
        return _load(path)


def update_plan(path: Path, change: Callable[[dict[str, Any]], _T | NoWrite]) -> _T:
    """Apply `change` to the plan at `path` and write it back (unless it returns `NoWrite`); its result."""
    with _LOCK:
        data = _load(path)
        data.setdefault("items", [])
        result = change(data)
        if isinstance(result, NoWrite):
            return result.value  # type: ignore[no-any-return]
        private_dir(path.parent)
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        temp.replace(path)
        return result


def is_blocked(item: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether an item waits on a dependency that is not done or cancelled."""
    return any(by_id[dep]["status"] not in TERMINAL_STATUSES for dep in item.get("depends_on", []) if dep in by_id)


def is_actionable(item: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether an item is open and waits on nothing."""
    return item["status"] == "open" and not is_blocked(item, by_id)


def would_cycle(by_id: Mapping[str, Mapping[str, Any]], item_id: str, new_dependency: str) -> bool:
    """Whether making `item_id` depend on `new_dependency` closes a circle."""
    seen: set[str] = set()
    waiting = [new_dependency]
    while waiting:
        current = waiting.pop()
        if current == item_id:
            return True
        if current in seen or current not in by_id:
            continue
        seen.add(current)
        waiting.extend(by_id[current].get("depends_on", []))
    return False
