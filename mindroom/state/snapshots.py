"""Named text snapshots the daemon writes for other processes (the hook counters for `mindroom hooks list`).

A snapshot is rewritten every few seconds and read by the CLI; losing the last one only means stale
counters. `sqlite.snapshots.FileSnapshots` keeps them as files under the data directory (written without
fsync), `postgres.positions.PostgresSnapshots` in the state's database.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["SnapshotStore", "check_snapshot_name"]

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
