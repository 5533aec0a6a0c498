"""Plugin names and where their state lives; names are checked so state never leaves `<data>/plugins/`."""

from __future__ import annotations

import re
from pathlib import Path

from mindroom.errors import PluginStateError

__all__ = ["PLUGIN_NAME_PATTERN", "plugin_state_dir", "validate_plugin_name"]

PLUGIN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def validate_plugin_name(name: object) -> str:
    """Return `name` if it is a safe plugin name (no separators, no `..`, not empty); raise otherwise."""
    if not isinstance(name, str) or not PLUGIN_NAME_PATTERN.fullmatch(name) or ".." in name:
        msg = (
            f"invalid plugin name {name!r}: use letters, digits, '_', '.', '-' "
            "(starting with a letter or digit, no '..', at most 128 characters)"
        )
        raise PluginStateError(msg)
    return name


def plugin_state_dir(storage_root: Path, plugin_name: str) -> Path:
    """`<storage_root>/plugins/<plugin_name>`, refusing any name that would resolve elsewhere."""
    validate_plugin_name(plugin_name)
    base = (storage_root / "plugins").resolve()
    path = (base / plugin_name).resolve()
    if path.parent != base:
        msg = f"plugin name {plugin_name!r} would place its state outside {base}"
        raise PluginStateError(msg)
    return path
