"""`SnapshotStore` beside the SQLite files: one private file per snapshot, `<data>/state/<name>.json`."""

from __future__ import annotations

from pathlib import Path

from mindroom.private_files import write_private_file
from mindroom.state.snapshots import check_snapshot_name

__all__ = ["FileSnapshots"]


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
