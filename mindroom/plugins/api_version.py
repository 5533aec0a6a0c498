"""The plugin API version this daemon provides, and how a manifest's `api_version` is compared with it.

Here, low in the package order, so manifests can read it without the `mindroom.plugin_api` facade;
`mindroom.plugin_api.version` publishes the same names.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PLUGIN_API_VERSION", "api_version_key", "supports_api_version"]

PLUGIN_API_VERSION: Final = "2026.10"
"""MindRoom's plugin API as of its 2026.10 release, beside the older hooks spec (both run here)."""

_VERSION = re.compile(r"^(\d{4})\.(\d{1,2})(?:\.\d+)*$")


def api_version_key(version: str) -> tuple[int, int]:
    """`(year, month)` of a version like `2026.10` (a release's further parts, `2026.10.589`, do not count)."""
    match = _VERSION.fullmatch(version.strip()) if isinstance(version, str) else None
    if match is None or not 1 <= int(match.group(2)) <= 12:
        msg = f"api_version {version!r} must look like YYYY.MM (for example {PLUGIN_API_VERSION!r})"
        raise ValueError(msg)
    return int(match.group(1)), int(match.group(2))


def supports_api_version(required: str) -> bool:
    """True when a plugin needing API `required` runs on this daemon's `PLUGIN_API_VERSION` (or older ones)."""
    return api_version_key(required) <= api_version_key(PLUGIN_API_VERSION)
