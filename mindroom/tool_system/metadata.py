"""`mindroom.tool_system.metadata`: `get_tool_by_name`, and the names plugins of both generations import here.

Plugins written before the 2026 API import `SetupType`, `ToolStatus`, `ToolCategory`, `ToolManagedInitArg`
and `register_tool_with_metadata` from this module; they are re-exported from `declarations` and
`registration`, where the 2026 API imports them from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mindroom.constants import RuntimePaths
from mindroom.errors import MindroomError
from mindroom.tool_system.declarations import (
    ConfigField,
    SetupType,
    ToolCategory,
    ToolExecutionTarget,
    ToolFileAccess,
    ToolManagedInitArg,
    ToolStatus,
)
from mindroom.tool_system.registration import managed_init_kwargs, register_tool_with_metadata, registered_tools
from mindroom.tool_system.runtime_context import ResolvedWorkerTarget, get_runtime_context

__all__ = [
    "ConfigField",
    "SetupType",
    "ToolCategory",
    "ToolExecutionTarget",
    "ToolFileAccess",
    "ToolManagedInitArg",
    "ToolMetadataValidationError",
    "ToolStatus",
    "get_tool_by_name",
    "register_tool_with_metadata",
]


class ToolMetadataValidationError(MindroomError, ValueError):
    """A tool name no registration knows, or a registration that cannot be built."""


def get_tool_by_name(
    tool_name: str,
    runtime_paths: RuntimePaths | None,
    *,
    worker_target: ResolvedWorkerTarget | None,
    disable_sandbox_proxy: bool = False,
    credential_overrides: Mapping[str, Any] | None = None,
    credentials_manager: Any = None,
    runtime_config: Any = None,
    tool_config_overrides: Mapping[str, Any] | None = None,
    tool_init_overrides: Mapping[str, Any] | None = None,
    worker_tools_override: Sequence[str] | None = None,
    runtime_overrides: Mapping[str, Any] | None = None,
    shared_storage_root_path: Path | None = None,
    allowed_shared_services: Sequence[str] | None = None,
    tool_output_workspace_root: Path | None = None,
    agent_state_root: Path | None = None,
    tool_output_auto_save_threshold_bytes: int | None = None,
    list_mcp_functions: bool = False,
) -> Any:
    """A new instance of the toolkit registered as `tool_name` (with `register_tool_with_metadata`).

    The registration's `managed_init_args` are filled from these arguments and the bound tool runtime
    context (agent, room); `tool_config_overrides` and `tool_init_overrides` are passed as constructor
    keywords. This daemon has no workers, sandbox proxy, output-file wrapping or MCP surface, so the
    keywords about those are accepted and have no effect. Built-in tools are not toolkits here: only
    registered plugin tools are found. `ToolMetadataValidationError` names the available ones.
    """
    del disable_sandbox_proxy, credential_overrides, runtime_overrides, shared_storage_root_path
    del allowed_shared_services, tool_output_auto_save_threshold_bytes, list_mcp_functions
    registrations = registered_tools()
    registration = registrations.get(tool_name)
    if registration is None:
        available = ", ".join(sorted(registrations)) or "none"
        msg = f"unknown tool {tool_name!r}; registered tools: {available}"
        raise ToolMetadataValidationError(msg)
    bound = get_runtime_context()
    values = {
        "runtime_paths": runtime_paths,
        "credentials_manager": credentials_manager,
        "worker_target": worker_target,
        "runtime_config": runtime_config if runtime_config is not None else getattr(bound, "config", None),
        "tool_output_workspace_root": tool_output_workspace_root,
        "worker_tools_override": worker_tools_override,
        "current_room_id": getattr(bound, "room_id", None),
        "agent_name": getattr(bound, "agent_name", None),
        "agent_state_root": agent_state_root,
    }
    kwargs = managed_init_kwargs(registration.metadata, values)
    kwargs.update(tool_config_overrides or {})
    kwargs.update(tool_init_overrides or {})
    toolkit_class = registration.factory()
    if not callable(toolkit_class):
        msg = f"tool {tool_name!r}: its factory returned {toolkit_class!r}, not a toolkit class"
        raise ToolMetadataValidationError(msg)
    return toolkit_class(**kwargs)
