"""Sync positions held by a state backend, and which backend each running daemon attached to its data directory.

The Matrix layer knows a bot only by its data directory; when the daemon's state lives in a database,
`SyncTokenStore` (and agno's session store) ask `attached_state` for that directory and use the database.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["AttachedState", "SyncTokens", "attach_state", "attached_state", "detach_state"]


class SyncTokens(Protocol):
    """The last fully handled sync token per bot."""

    def load(self, bot_name: str) -> str | None:
        """The stored token, or None."""

    def save(self, bot_name: str, token: str) -> None:
        """Keep `token` as the bot's position."""

    def clear(self, bot_name: str) -> None:
        """Forget the bot's position."""


@dataclass(frozen=True, slots=True)
class AttachedState:
    """What parts below the daemon need from its state: where sync tokens and agent sessions live."""

    sync_tokens: SyncTokens | None = None
    session_url: str | None = None
    """A PostgreSQL URL for agno's session store, or None for SQLite files under the data directory."""


_lock = threading.Lock()
_attached: dict[Path, AttachedState] = {}


def _key(storage_root: Path) -> Path:
    return Path(storage_root).expanduser().resolve()


def attach_state(storage_root: Path, state: AttachedState) -> None:
    """From now on, code working in `storage_root` uses `state` (the daemon calls this once it holds the lock)."""
    with _lock:
        _attached[_key(storage_root)] = state


def detach_state(storage_root: Path) -> None:
    """`storage_root` goes back to files (the daemon stopped)."""
    with _lock:
        _attached.pop(_key(storage_root), None)


def attached_state(storage_root: Path) -> AttachedState | None:
    """The state a running daemon attached to `storage_root`, or None."""
    with _lock:
        return _attached.get(_key(storage_root))
