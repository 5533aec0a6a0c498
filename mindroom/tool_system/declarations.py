"""What a plugin declares about a tool it registers: categories, statuses, setup, file access, config fields.

The names and values of MindRoom's 2026 plugin API (`mindroom.tool_system.declarations`). Every enum is a
`(str, Enum)` whose values are the lowercase member names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

__all__ = [
    "CONFIG_FIELD_TYPES",
    "ConfigField",
    "SetupType",
    "ToolCategory",
    "ToolExecutionTarget",
    "ToolFileAccess",
    "ToolManagedInitArg",
    "ToolStatus",
]


class ToolCategory(str, Enum):  # noqa: UP042 - the documented (str, Enum); str() of a member is its qualified name
    """Where the dashboard files a tool."""

    EMAIL = "email"
    ENTERTAINMENT = "entertainment"
    SOCIAL = "social"
    DEVELOPMENT = "development"
    RESEARCH = "research"
    INFORMATION = "information"
    PRODUCTIVITY = "productivity"
    COMMUNICATION = "communication"
    INTEGRATIONS = "integrations"
    SMART_HOME = "smart_home"


class ToolStatus(str, Enum):  # noqa: UP042
    """Whether a tool works as installed or needs configuration first."""

    AVAILABLE = "available"
    REQUIRES_CONFIG = "requires_config"


class SetupType(str, Enum):  # noqa: UP042
    """How a tool is set up: not at all, with an API key, through OAuth, or its own way."""

    NONE = "none"
    API_KEY = "api_key"
    OAUTH = "oauth"
    SPECIAL = "special"


class ToolExecutionTarget(str, Enum):  # noqa: UP042
    """Where a tool runs by default: the daemon's own process, or a worker."""

    PRIMARY = "primary"
    WORKER = "worker"


class ToolFileAccess(str, Enum):  # noqa: UP042
    """What a tool does with file paths the model gives it.

    `NONE`: it takes no paths. `AGENT`: every path goes through `resolve_agent_file` into the agent's
    workspace. `UNCONFINED`: it may reach files in ways no path check confines.
    """

    NONE = "none"
    AGENT = "agent"
    UNCONFINED = "unconfined"


class ToolManagedInitArg(str, Enum):  # noqa: UP042
    """A runtime value the daemon passes to a toolkit's constructor, when the registration lists it."""

    RUNTIME_PATHS = "runtime_paths"
    CREDENTIALS_MANAGER = "credentials_manager"
    WORKER_TARGET = "worker_target"
    RUNTIME_CONFIG = "runtime_config"
    TOOL_OUTPUT_WORKSPACE_ROOT = "tool_output_workspace_root"
    WORKER_TOOLS_OVERRIDE = "worker_tools_override"
    CURRENT_ROOM_ID = "current_room_id"
    AGENT_NAME = "agent_name"
    FILE_ACCESS = "file_access"
    AGENT_STATE_ROOT = "agent_state_root"
    SHARED_DIRECTORY_ROOTS = "shared_directory_roots"

    @property
    def kwarg(self) -> str:
        """The constructor keyword this value is passed as (the member's value)."""
        return str(self.value)


CONFIG_FIELD_TYPES: Final = frozenset({"text", "password", "url", "number", "boolean", "select", "string[]"})


@dataclass(frozen=True, slots=True)
class ConfigField:
    """A constructor keyword an operator can set for a tool (`default` only pre-fills the dashboard form)."""

    name: str
    label: str
    type: str = "text"
    required: bool = True
    default: Any = None
    placeholder: str | None = None
    description: str | None = None
    options: list[dict[str, str]] | None = None
    validation: Mapping[str, Any] | None = None
    authored_override: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            msg = f"ConfigField name {self.name!r} must be a Python identifier (it is a constructor keyword)"
            raise ValueError(msg)
        if self.type not in CONFIG_FIELD_TYPES:
            msg = f"ConfigField {self.name!r}: type {self.type!r} is not one of {sorted(CONFIG_FIELD_TYPES)}"
            raise ValueError(msg)
