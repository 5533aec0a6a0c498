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
    "HANDOFF_KEY",
    "HOOK_DISPATCH_KEY",
    "HOOK_ORIGIN_EVENT_KEY",
    "HOOK_SOURCE_KEY",
    "HOPS_KEY",
    "ORIGINAL_SENDER_KEY",
    "PLUGIN_MANIFEST_FILENAME",
    "ROUTER_AGENT_NAME",
    "SCHEDULE_ID_KEY",
    "STREAM_STATUS_APPROVAL_PENDING",
    "STREAM_STATUS_CANCELLED",
    "STREAM_STATUS_COMPLETED",
    "STREAM_STATUS_ERROR",
    "STREAM_STATUS_INTERRUPTED",
    "STREAM_STATUS_KEY",
    "STREAM_STATUS_PENDING",
    "STREAM_STATUS_STREAMING",
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
HANDOFF_KEY = "com.mindroom.handoff"
"""On a question one agent hands to another: the agent it is for (answered within the asking turn, not by sync)."""
STREAM_STATUS_KEY = "io.mindroom.stream_status"
"""On an agent's reply (its first message and each edit): whether it is still being written, and how it ended."""
STREAM_STATUS_PENDING = "pending"
"""Sent before any text exists (this daemon sends a streamed reply's first message with its first text instead)."""
STREAM_STATUS_STREAMING = "streaming"
"""The reply is being written: its text grows with each edit."""
STREAM_STATUS_APPROVAL_PENDING = "approval_pending"
"""The reply waits for a person to allow or deny a tool call before it goes on."""
STREAM_STATUS_COMPLETED = "completed"
"""The reply is final: sent whole, or the last edit of a streamed one."""
STREAM_STATUS_CANCELLED = "cancelled"
"""A person stopped the reply (🛑): its text ends where it was stopped."""
STREAM_STATUS_INTERRUPTED = "interrupted"
"""The daemon stopped while the reply was being written (marked on the way down, or on the next start)."""
STREAM_STATUS_ERROR = "error"
"""The model failed: the reply says so instead of answering."""
PLUGIN_MANIFEST_FILENAME = "mindroom.plugin.json"
DEFAULT_CONFIG_FILENAME = "config.yaml"
DEFAULT_STORAGE_DIRNAME = "mindroom_data"
DEFAULT_ACCOUNT_PREFIX = "mindroom_"
"""Bot accounts are named `<prefix><agent>`; a different prefix lets several daemons share one homeserver."""


@dataclass(frozen=True, slots=True, init=False)
class RuntimePaths:
    """Where the config lives, where state is stored, and the environment the config was read with.

    Built with this daemon's keywords (`config_path`, `storage_root`, `env_values`; positionally too) or
    MindRoom 2026.10's (`config_path`, `config_dir`, `env_path`, `storage_root`, `control_state_root`,
    `process_env`, `env_file_values`). Without `env_values`, the environment is the `.env` file's values
    overlaid by the process's (`process_env` wins, as in MindRoom). `config_dir` defaults to the config
    file's folder and `env_path` to `.env` in it.
    """

    config_path: Path
    storage_root: Path
    env_values: Mapping[str, str]
    config_dir: Path
    """The folder relative paths in the config resolve against."""
    env_path: Path
    control_state_root: Path | None
    """MindRoom's separate control-state folder; nothing here keeps state outside `storage_root`."""
    process_env: Mapping[str, str] = field(repr=False)
    env_file_values: Mapping[str, str] = field(repr=False)

    def __init__(
        self,
        config_path: Path,
        storage_root: Path,
        env_values: Mapping[str, str] | None = None,
        *,
        config_dir: Path | None = None,
        env_path: Path | None = None,
        control_state_root: Path | None = None,
        process_env: Mapping[str, str] | None = None,
        env_file_values: Mapping[str, str] | None = None,
    ) -> None:
        config_dir = config_path.parent if config_dir is None else config_dir
        process_env = {} if process_env is None else process_env
        env_file_values = {} if env_file_values is None else env_file_values
        values: dict[str, object] = {
            "config_path": config_path,
            "storage_root": storage_root,
            "env_values": {**env_file_values, **process_env} if env_values is None else env_values,
            "config_dir": config_dir,
            "env_path": config_dir / ".env" if env_path is None else env_path,
            "control_state_root": control_state_root,
            "process_env": process_env,
            "env_file_values": env_file_values,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def plugins_state_root(self) -> Path:
        """The folder under which each plugin gets its own `state_root`."""
        return self.storage_root / "plugins"

    def env(self, name: str, default: str | None = None) -> str | None:
        """An environment value as the config saw it, else from the process (for paths built outside the daemon)."""
        if name in self.env_values:
            return self.env_values[name]
        return os.environ.get(name, default)

    def env_value(self, name: str, *, default: str | None = None) -> str | None:
        """MindRoom's name for `env`."""
        return self.env(name, default)

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
