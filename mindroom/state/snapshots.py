"""Named text snapshots the daemon writes for other processes (the hook counters for `mindroom hooks list`).

A snapshot is rewritten every few seconds and read by the CLI; losing the last one only means stale
counters, so the file form is written without fsync.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from mindroom.private_files import write_private_file

__all__ = ["FileSnapshots", "SnapshotStore", "check_snapshot_name"]

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def check_snapshot_name(name: str) -> str:
    """`name` when it can name a snapshot (it becomes a file name); `ValueError` otherwise."""
    if not _NAME.match(name):
        msg = f"not a snapshot name: {name!r}"
        raise ValueError(msg)
    return name


class SnapshotStore(Protocol):
    """Write and read named text snapshots."""

    def write(self, name: str, text: str) -> None:
        """Replace the snapshot `name` with `text`."""

    def read(self, name: str) -> str | None:
        """The snapshot `name`, or None when there is none."""


class FileSnapshots:
    """Snapshots as private files `<state_dir>/<name>.json`."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def path(self, name: str) -> Path:
        """The file of one snapshot."""
        return self.state_dir / f"{check_snapshot_name(name)}.json"

    def write(self, name: str, text: str) -> None:
        """Replace the file atomically (mode 0600, no fsync)."""
        write_private_file(self.path(name), text, durable=False)

    def read(self, name: str) -> str | None:
        """The file's text, or None when it does not exist."""
        try:
            return self.path(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
