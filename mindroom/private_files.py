"""Private files: everything the daemon keeps under its data directory is its own (0600 files, 0700 folders).

The data directory holds credentials, tokens, every conversation (the session databases) and what tools
wrote. Files are created private from the start, never created open and tightened later. What other code
creates (agno's SQLite side files, Synapse's database, media and logs, files a plugin or a tool writes)
is covered by the process umask, which `mindroom run` sets with `use_private_umask`. `shared_paths` and
`warn_if_shared` find what is open to other users anyway, say, a data directory made by hand.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
from pathlib import Path

from mindroom.logging_config import get_logger

__all__ = [
    "PRIVATE_UMASK",
    "SQLITE_CACHE_PRAGMA",
    "create_private_file",
    "make_private",
    "open_private_database",
    "open_to_others",
    "prepare_private_sqlite",
    "private_dir",
    "shared_paths",
    "use_private_umask",
    "warn_if_shared",
    "write_private_file",
]

logger = get_logger(__name__)

PRIVATE_UMASK = 0o077
"""Files and folders a process creates under this umask are its user's alone (0600 / 0700 at most)."""
_OPEN_TO_OTHERS = 0o077
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def use_private_umask() -> int:
    """Set the process umask to `PRIVATE_UMASK`; returns the previous one."""
    return os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents with mode 0700; tighten `path` itself when others can enter it."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) & _OPEN_TO_OTHERS:
        path.chmod(0o700)
    return path


def create_private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 in a 0700 folder unless it exists; tighten it when others can read it."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & _OPEN_TO_OTHERS:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def prepare_private_sqlite(path: Path) -> Path:
    """Make a SQLite database file private before SQLite or a library opens it.

    SQLite creates its -wal, -shm and -journal files with the mode of the database file, so a database
    created 0600 keeps its side files private too; side files an older run left open are tightened.
    """
    create_private_file(path)
    for suffix in _SQLITE_SIDE_FILES:
        side = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(side.stat().st_mode) & _OPEN_TO_OTHERS:
                side.chmod(0o600)
    return path


def write_private_file(path: Path, text: str | bytes, *, durable: bool = True) -> None:
    """Atomically replace `path` with `text` (or bytes): temp file (0600) in the same 0700 dir, rename.

    `durable` also fsyncs file and folder (survives power loss). Without it the rename is still atomic,
    which is all a process crash needs: used for the sync token and telemetry snapshots, whose loss only
    means a little repeated work.
    """
    private_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(text.encode() if isinstance(text, str) else text)
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


SQLITE_CACHE_PRAGMA = "PRAGMA cache_size = -512"
"""Every SQLite connection of the daemon keeps at most 512 KiB of pages. SQLite's default, 2 MiB per
connection, fills as a file grows (the journal and each agent's history grow with every message); the
daemon reads a few rows at a time, and the OS caches the files anyway."""


def open_private_database(path: Path, schema: str = "", *, synchronous_normal: bool = False) -> sqlite3.Connection:
    """Open (or create) a SQLite file, mode 0600 in a 0700 folder, in WAL mode with autocommit, with `schema` run.

    `synchronous_normal`: in WAL mode a commit survives a crash of the process (not of the machine) at less cost.
    """
    prepare_private_sqlite(path)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(SQLITE_CACHE_PRAGMA)
    if synchronous_normal:
        db.execute("PRAGMA synchronous=NORMAL")
    if schema:
        db.executescript(schema)
    return db


def shared_paths(directory: Path) -> list[Path]:
    """Everything under `directory`, itself included, that its group or other users may read, write or enter.

    Symbolic links are not followed (their own mode means nothing); a folder that cannot be read is skipped.
    """
    found: list[Path] = []
    for root, _folders, files in os.walk(directory):
        for path in (Path(root), *(Path(root) / name for name in files)):
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & _OPEN_TO_OTHERS:
                found.append(path)
    return sorted(found)


def make_private(directory: Path) -> list[Path]:
    """Take group and other access away from everything under `directory` (a folder the daemon owns alone).

    For data an older version wrote with the default umask; returns what was changed.
    """
    changed = shared_paths(directory)
    for path in changed:
        path.chmod(stat.S_IMODE(path.lstat().st_mode) & 0o700)
    return changed


def open_to_others(path: Path) -> bool:
    """True when `path` exists and its group or other users may read, write or enter it."""
    try:
        return bool(stat.S_IMODE(path.stat().st_mode) & _OPEN_TO_OTHERS)
    except FileNotFoundError:
        return False


def warn_if_shared(data_dir: Path) -> bool:
    """Log a warning when other users may enter the data directory itself; True when it warned."""
    if not open_to_others(data_dir):
        return False
    logger.warning(
        "the data directory is open to other users; it holds credentials and every conversation",
        path=str(data_dir),
        mode=f"{stat.S_IMODE(data_dir.stat().st_mode):04o}",
        fix=f"chmod 700 {data_dir}",
    )
    return True
