"""Private files: written atomically, mode 0600, in a 0700 folder (credentials, tokens, secrets)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path

__all__ = ["open_private_database", "write_private_file"]


def write_private_file(path: Path, text: str, *, durable: bool = True) -> None:
    """Atomically replace `path` with `text`: temp file (0600) in the same 0700 dir, rename.

    `durable` also fsyncs file and folder (survives power loss). Without it the rename is still atomic,
    which is all a process crash needs: used for the sync token and telemetry snapshots, whose loss only
    means a little repeated work.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if durable:
        path.parent.chmod(0o700)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            if durable:
                tmp.flush()
                os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def open_private_database(path: Path) -> sqlite3.Connection:
    """Open (or create) a SQLite file, mode 0600 in a 0700 folder, in WAL mode with autocommit.

    The mode is set before WAL is switched on, so the journal files SQLite creates match it.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    os.chmod(path, 0o600)
    db.execute("PRAGMA journal_mode=WAL")
    return db
