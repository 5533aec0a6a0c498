"""Config notices: what a config asks for that this daemon accepts and does not do, each named by its key.

A notice never stops a start; it is shown wherever the config is read for a person: `mindroom config
validate`, the start-up log, `mindroom doctor` and the dashboard's config page. Validators add notices about
values (a prompt this daemon never uses, a reranker provider it cannot call) with `notice()` while `collecting`;
keys come from `mindroom.config.unused_keys`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["ConfigNotice", "collecting", "notice"]


@dataclass(frozen=True, slots=True)
class ConfigNotice:
    """One key of the config that this daemon accepts and does not act on (or not fully), and why."""

    key: str
    """The key path as written (`agents.helper.participation`)."""
    message: str
    line: int | None = None

    def __str__(self) -> str:
        at = f" (line {self.line})" if self.line else ""
        return f"{self.key}{at}: {self.message}"


_COLLECTOR: ContextVar[list[ConfigNotice] | None] = ContextVar("mindroom_config_notices", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[ConfigNotice]]:
    """Within the block, `notice()` calls are gathered into the yielded list."""
    found: list[ConfigNotice] = []
    token = _COLLECTOR.set(found)
    try:
        yield found
    finally:
        _COLLECTOR.reset(token)


def notice(key: str, message: str) -> None:
    """Record a notice for `key` (outside `collecting`, e.g. a model built in code, it is dropped)."""
    found = _COLLECTOR.get()
    if found is not None:
        found.append(ConfigNotice(key, message))
