"""`SqliteState`: state in SQLite files under the data directory, one daemon per directory by `flock`.

The lock is `<data>/state/daemon.lock`, held (`flock`, exclusive) by an open file for as long as the daemon
runs; the kernel releases it when the process ends, however it ends. The file holds the holder's host,
pid and start time, so a refused daemon can name it. A standby on this backend must see the same files
(the same machine, or a shared filesystem whose `flock` reaches every machine).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from mindroom.private_files import private_dir
from mindroom.state.backend import StateBackend, StateStores
from mindroom.state.holder import LockHolder
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.state.sqlite.connections import SqliteConnectionStore
from mindroom.state.sqlite.grants import SqliteGrantStore
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.overrides import SqliteOverrideStore
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from mindroom.state.sqlite.schedules import SqliteScheduleStore
from mindroom.state.sqlite.snapshots import FileSnapshots
from mindroom.state.sqlite.usage import SqliteUsageStore

__all__ = ["LOCK_FILENAME", "SqliteState", "lock_held", "read_lock_file"]

LOCK_FILENAME = "daemon.lock"


def read_lock_file(path: Path) -> LockHolder | None:
    """The holder a lock file names, or None (no file, or nothing written yet)."""
    try:
        return LockHolder.from_json(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def lock_held(path: Path) -> bool:
    """True while a process holds the lock file's `flock`; False when it is free or there is no file.

    Asked with a shared, non-blocking `flock` on a descriptor of its own, closed at once. A holder's exclusive
    lock refuses it and stays as it was (a `flock` belongs to one open file), so a running daemon is never
    disturbed; nothing is created or written. While the lock is free, a daemon trying it in that same instant
    finds it taken (a standby tries again at its next poll).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # drops the shared lock, if it was granted
    return False


class SqliteState(StateBackend):
    """`daemon.db`, `rooms.db`, `answers.db`, `approvals.db`, `grants.db`, `schedules.db`, `overrides.db`, `usage.db`,
    `connections.db` and `hooks.json` under `<data>/state`."""

    kind = "sqlite"

    def __init__(self, storage_root: Path) -> None:
        super().__init__(str(storage_root))
        self.storage_root = storage_root
        self.state_dir = storage_root / "state"
        self.lock_path = self.state_dir / LOCK_FILENAME
        self._fd: int | None = None

    async def try_lock(self) -> LockHolder | None:
        """`flock` the lock file without waiting; on success write this process into it."""
        if self._locked:
            return None
        private_dir(self.state_dir)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return read_lock_file(self.lock_path)
        # Written only once the lock is ours: truncating before would erase the holder's name.
        os.ftruncate(fd, 0)
        os.pwrite(fd, LockHolder.this_process().to_json().encode(), 0)
        self._fd = fd
        self._locked = True
        return None

    async def read_holder(self) -> LockHolder | None:
        """The lock file's holder while someone holds the lock; None when it is free."""
        if self._locked or lock_held(self.lock_path):
            return read_lock_file(self.lock_path)
        return None

    async def _load_stores(self) -> StateStores:
        # No sync_tokens or session_url: the Matrix and AI layers keep those in files of their own.
        return StateStores(
            journal=SqliteTurnJournal(self.state_dir / "daemon.db"),
            rooms=SqliteRoomMemory(self.state_dir / "rooms.db"),
            answers=SqliteAnswerLog(self.state_dir / "answers.db"),
            approvals=SqliteApprovalStore(self.state_dir / "approvals.db"),
            schedules=SqliteScheduleStore(self.state_dir / "schedules.db"),
            snapshots=FileSnapshots(self.state_dir),
            grants=SqliteGrantStore(self.state_dir / "grants.db"),
            overrides=SqliteOverrideStore(self.state_dir / "overrides.db"),
            usage=SqliteUsageStore(self.state_dir / "usage.db"),
            connections=SqliteConnectionStore(self.state_dir / "connections.db"),
        )

    async def _release(self) -> None:
        stores = self._stores
        if stores is not None:
            stores.close()
        if self._fd is not None:
            # The content stays: it only counts while the file is locked, and the next holder rewrites it.
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
