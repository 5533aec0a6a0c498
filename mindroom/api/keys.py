"""The dashboard key of the embedded default: generated once, kept private (0600) in the data directory.

With no `MINDROOM_API_KEY` and no homeserver of one's own, `mindroom run` makes a key, shows it once in
its banner (as it shows the account's password), and reads it back from the file on later starts.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from mindroom.logging_config import register_secret_values
from mindroom.private_files import write_private_file

__all__ = ["KEY_FILENAME", "DashboardKey", "dashboard_key"]

KEY_FILENAME = "dashboard_key"


@dataclass(frozen=True, slots=True)
class DashboardKey:
    """The key, where it is kept, and whether it was made just now (then the banner shows it)."""

    value: str = field(repr=False)
    path: Path
    created: bool


def dashboard_key(storage_root: Path) -> DashboardKey:
    """The embedded default's dashboard key: read from `<data>/dashboard_key`, or made and stored now."""
    path = storage_root / KEY_FILENAME
    try:
        value = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        value = ""
    created = not value
    if created:
        value = secrets.token_urlsafe(24)
        write_private_file(path, value + "\n")
    register_secret_values([value])
    return DashboardKey(value, path, created)
