"""MindRoom keys this daemon accepts and does not use: one notice each, and their values left out.

`set_aside(document, declared)` walks the document along MindRoom's key tree (`mindroom.config.mindroom_keys`).
A key whose note is in `NOT_USED` gets a notice naming it and the reason; its value is left out of the
document unless this daemon's own models declare the key (`declared`, as `model_key_paths` spells them), so
the strict models never see it. Inside a value left out, a key MindRoom does not know either is still an
error, with its path. Everything else (this daemon's own keys, typos) is left for the models to judge.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from mindroom.config.key_notes import NOT_USED
from mindroom.config.mindroom_keys import child_pattern, mindroom_keys_under
from mindroom.config.notices import ConfigNotice

__all__ = ["SetAside", "model_key_paths", "set_aside"]

_LineOf = Callable[[tuple[str | int, ...]], int | None]


@dataclass(slots=True)
class SetAside:
    """The document without the values left out, a notice per key not used, and keys unknown to MindRoom too."""

    document: dict[str, Any]
    notices: list[ConfigNotice] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _spelled(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def set_aside(document: dict[str, Any], declared: Iterable[str], line_of: _LineOf = lambda _: None) -> SetAside:
    """The document with the unused MindRoom keys it holds noticed (and left out unless `declared`)."""
    own = frozenset(declared)
    result = SetAside(document)

    def walk(node: Any, pattern: str, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, child_pattern(pattern, index) or "", (*path, index)) for index, item in enumerate(node)]
        if not isinstance(node, dict) or (pattern == "" and path):
            return node
        kept: dict[Any, Any] = {}
        for key, value in node.items():
            child = child_pattern(pattern, str(key)) if isinstance(key, str) else None
            where = (*path, str(key))
            if child is None:
                kept[key] = value
            elif child in NOT_USED:
                result.notices.append(
                    ConfigNotice(_spelled(where), f"accepted, not used here: {NOT_USED[child]}", line_of(where))
                )
                if child in own:
                    kept[key] = value
                else:
                    _check_known(value, child, where)
            else:
                kept[key] = walk(value, child, where)
        return kept

    def _check_known(node: Any, pattern: str, path: tuple[str | int, ...]) -> None:
        if isinstance(node, list):
            for index, item in enumerate(node):
                inner = child_pattern(pattern, index)
                if inner is not None:
                    _check_known(item, inner, (*path, index))
            return
        if not isinstance(node, dict) or not _has_keys(pattern):
            return
        for key, value in node.items():
            child = child_pattern(pattern, str(key))
            where = (*path, str(key))
            if child is None:
                line = line_of(where)
                at = f" (line {line})" if line else ""
                result.problems.append(f"{_spelled(where)}{at}: not a key here, nor of MindRoom's config")
            else:
                _check_known(value, child, where)

    result.document = walk(document, "", ())
    return result


def _has_keys(pattern: str) -> bool:
    return bool(mindroom_keys_under(pattern)) or child_pattern(pattern, "\x00") is not None


def model_key_paths(model: type[BaseModel]) -> frozenset[str]:
    """Every key path a pydantic model declares (`*` for a mapping's keys, `[]` for a list's items)."""
    found: set[str] = set()

    def fields(cls: type[BaseModel], prefix: str, seen: frozenset[type]) -> None:
        for name, info in cls.model_fields.items():
            path = f"{prefix}.{info.alias or name}" if prefix else info.alias or name
            found.add(path)
            inner(info.annotation, path, seen)

    def inner(annotation: Any, level: str, seen: frozenset[type]) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                fields(annotation, level, seen | {annotation})
            return
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is dict:
            for arg in args[1:]:
                inner(arg, f"{level}.*", seen)
        elif origin in (list, tuple):
            for arg in args:
                inner(arg, f"{level}[]", seen)
        else:
            for arg in args:
                inner(arg, level, seen)

    fields(model, "", frozenset({model}))
    return frozenset(found)
