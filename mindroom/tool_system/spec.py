"""What a tool is to the daemon: a named callable with an optional schema, and what built-in tools are given.

Tools here are plain Python (no agno): `mindroom.ai.tools` turns `ToolSpec`s into what the model layer runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindroom.config.main import ToolsConfig
from mindroom.errors import MindroomError
from mindroom.state.attachments import AttachmentStore
from mindroom.tool_system.workspace_layout import workspace_dir

__all__ = [
    "RESERVED_PARAMETERS",
    "AgentToolEnvironment",
    "IsolationLimits",
    "MessageSendFunction",
    "OutboundFile",
    "ToolError",
    "ToolOutput",
    "ToolSpec",
    "workspace_dir",
]

# Parameter names the model layer fills itself and hides from the model, so a tool would never receive them.
RESERVED_PARAMETERS = frozenset({"agent", "team", "run_context", "images", "videos", "audios", "files"})

MessageSendFunction = Callable[[str, str, str | None], Awaitable[str]]


class ToolError(MindroomError):
    """A tool refusing or failing a call for a reason the model should read (the message is shown to it)."""


@dataclass(frozen=True, slots=True)
class IsolationLimits:
    """What one call of an isolated tool may use before its worker process is stopped.

    `timeout_s` is wall-clock time (the worker is killed then); `memory_bytes` caps the worker's address
    space (`RLIMIT_AS`) and `cpu_s` its CPU time (`RLIMIT_CPU`, at least `timeout_s` when left `None`).
    """

    timeout_s: float = 10.0
    memory_bytes: int = 512 * 1024 * 1024
    cpu_s: float | None = None

    def __post_init__(self) -> None:
        if not self.timeout_s > 0 or self.memory_bytes < 64 * 1024 * 1024:
            msg = "isolation limits need timeout_s > 0 and memory_bytes >= 64 MiB"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as the model sees it: its name, what it does, and the callable that runs it.

    `description` and `parameters` (a JSON schema object) are derived from the callable's signature and
    docstring when left `None`. A synchronous callable with `in_thread` runs in a worker thread, so a slow
    plugin tool cannot stall every bot; built-in synchronous tools are quick and run inline.

    An `isolated` tool runs in a separate worker process under `limits` (see `mindroom.tool_system.isolation`):
    a call that loops or eats memory is killed, not the daemon. Its callable must be a module-level
    function, it gets the arguments as JSON values and its result comes back as JSON.
    """

    name: str
    function: Callable[..., Any]
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    in_thread: bool = False
    isolated: bool = False
    limits: IsolationLimits = IsolationLimits()
    toolkit: str | None = None
    """The group or plugin the tool belongs to (`shell`, a plugin's name), as `tool:environment` names it."""
    timeout_s: float | None = None
    """Past this, the call fails with a timeout the model reads (a thread running it is left to finish)."""


@dataclass(frozen=True, slots=True)
class OutboundFile:
    """A file or image a tool made for the person: sent with the agent's answer, in its thread."""

    name: str
    data: bytes
    mime_type: str = "application/octet-stream"

    @property
    def is_image(self) -> bool:
        """True for `image/*`: sent as `m.image`, anything else as `m.file`."""
        return self.mime_type.startswith("image/")


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns when it has files for the person besides its text for the model."""

    text: str
    files: tuple[OutboundFile, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentToolEnvironment:
    """What built-in tools of one agent work with: its workspace, the tool settings, and Matrix access."""

    agent_name: str
    workspace: Path
    settings: ToolsConfig = field(default_factory=ToolsConfig)
    send_message: MessageSendFunction | None = None
    joined_rooms: Callable[[], Collection[str]] = frozenset
    room_aliases: Callable[[], Mapping[str, str]] = dict
    attachments: AttachmentStore | None = None
