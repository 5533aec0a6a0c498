"""Names that plugins import, and the storage paths every part of the daemon shares."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_ACCOUNT_PREFIX",
    "DEFAULT_CONFIG_FILENAME",
    "DEFAULT_STORAGE_DIRNAME",
    "HOOK_DISPATCH_KEY",
    "HOOK_ORIGIN_EVENT_KEY",
    "HOOK_SOURCE_KEY",
    "HOPS_KEY",
    "ORIGINAL_SENDER_KEY",
    "PLUGIN_MANIFEST_FILENAME",
    "ROUTER_AGENT_NAME",
    "SCHEDULE_ID_KEY",
    "SYNTHETIC_DEPTH_KEY",
    "VOICE_PREFIX",
    "RuntimePaths",
    "resolve_config_relative_path",
]

ROUTER_AGENT_NAME = "router"
VOICE_PREFIX = "🎤 "
ORIGINAL_SENDER_KEY = "com.mindroom.original_sender"
SYNTHETIC_DEPTH_KEY = "com.mindroom.hook_depth"
HOOK_SOURCE_KEY = "com.mindroom.hook_source"
HOOK_DISPATCH_KEY = "com.mindroom.hook_dispatch"
HOOK_ORIGIN_EVENT_KEY = "com.mindroom.hook_origin_event"
SCHEDULE_ID_KEY = "com.mindroom.schedule_id"
HOPS_KEY = "com.mindroom.hops"
"""On a bot's answer: how many bot answers led to it (1 for an answer to a person), to stop bots looping."""
PLUGIN_MANIFEST_FILENAME = "mindroom.plugin.json"
DEFAULT_CONFIG_FILENAME = "config.yaml"
DEFAULT_STORAGE_DIRNAME = "mindroom_data"
DEFAULT_ACCOUNT_PREFIX = "mindroom_"
"""Bot accounts are named `<prefix><agent>`; a different prefix lets several daemons share one homeserver."""


@dataclass(frozen=True, slots=True)
class RuntimePaths:
    """Where the config lives, where state is stored, and the environment the config was read with."""

    config_path: Path
    storage_root: Path
    env_values: Mapping[str, str] = field(default_factory=dict)

    @property
    def config_dir(self) -> Path:
        """The folder holding the config file; relative paths in the config resolve against it."""
        return self.config_path.parent

    @property
    def plugins_state_root(self) -> Path:
        """The folder under which each plugin gets its own `state_root`."""
        return self.storage_root / "plugins"

    def env(self, name: str, default: str | None = None) -> str | None:
        """An environment value as the config saw it, else from the process (for paths built outside the daemon)."""
        if name in self.env_values:
            return self.env_values[name]
        return os.environ.get(name, default)

    @classmethod
    def for_directory(cls, root: Path) -> RuntimePaths:
        """Paths for a config file and data directory side by side in `root` (handy in tests)."""
        root = root.resolve()
        return cls(config_path=root / DEFAULT_CONFIG_FILENAME, storage_root=root / DEFAULT_STORAGE_DIRNAME)


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def resolve_config_relative_path(raw_path: str | os.PathLike[str], runtime_paths: RuntimePaths) -> Path:
    """Resolve a path written in the config: `~` and `$VARS` (as `runtime_paths.env` reads them) expand, relative
    paths start at the config's folder."""

    def expand(match: re.Match[str]) -> str:
        value = runtime_paths.env(match.group(1) or match.group(2))
        return match.group(0) if value is None else value

    text = _VARIABLE.sub(expand, os.fspath(raw_path))
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = runtime_paths.config_dir / path
    return path.resolve()
