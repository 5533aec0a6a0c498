"""The key of `/api`, the dashboard and `/metrics`: the operator's `MINDROOM_API_KEY`, else one generated once
and kept private (0600) in the data directory.

Whenever the HTTP app runs without `MINDROOM_API_KEY`, `mindroom run` makes a key, shows it once in its banner
(as it shows the embedded account's password), and reads it back from the file on later starts. Only
`MINDROOM_API_ALLOW_UNAUTHENTICATED=true` serves `/api` without one (on loopback, with a warning).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path

from mindroom.api.settings import ApiSettings
from mindroom.logging_config import get_logger, register_secret_values
from mindroom.private_files import write_private_file

__all__ = ["KEY_FILENAME", "DashboardKey", "dashboard_key", "with_api_key"]

logger = get_logger(__name__)

KEY_FILENAME = "dashboard_key"


@dataclass(frozen=True, slots=True)
class DashboardKey:
    """The key, where it is kept, and whether it was made just now (then the banner shows it)."""

    value: str = field(repr=False)
    path: Path
    created: bool


def dashboard_key(storage_root: Path) -> DashboardKey:
    """The generated dashboard key: read from `<data>/dashboard_key`, or made and stored now."""
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


def with_api_key(settings: ApiSettings, storage_root: Path) -> tuple[ApiSettings, DashboardKey | None]:
    """`settings` with the key `/api` requires: `MINDROOM_API_KEY`'s, else the generated one (returned too, for
    the banner). Unchanged, with a warning, when the operator opted out (`MINDROOM_API_ALLOW_UNAUTHENTICATED`)."""
    if settings.api_key:
        return settings, None
    if settings.api_allow_unauthenticated:
        logger.warning(
            "the API, the dashboard and /metrics take requests without a key",
            variable="MINDROOM_API_ALLOW_UNAUTHENTICATED",
            host=settings.host,
            fix="unset MINDROOM_API_ALLOW_UNAUTHENTICATED so a key is generated, or set MINDROOM_API_KEY",
        )
        return settings, None
    key = dashboard_key(storage_root)
    return replace(settings, api_key=key.value), key
