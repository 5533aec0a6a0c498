"""MindRoom's paths of where an agent works, for plugins written against MindRoom.

Every agent here has one workspace, `<data>/agents/<agent>/workspace/` (its file and shell tools work in it), and
there are no private per-requester copies of an agent and no worker processes to route them to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mindroom.tool_system.runtime_context import (
    ResolvedWorkerTarget,
    ToolExecutionIdentity,
    build_execution_identity_from_runtime_context,
    get_tool_runtime_context,
)
from mindroom.tool_system.spec import workspace_dir

__all__ = [
    "ResolvedWorkerTarget",
    "ToolExecutionIdentity",
    "WorkerScope",
    "agent_workspace_root_path",
    "get_tool_execution_identity",
    "private_instance_state_root_for_requester",
]

WorkerScope = Literal["shared", "user", "user_agent"]
"""MindRoom's scopes of a worker (who shares one); none of them applies here, where there are no workers."""


def agent_workspace_root_path(base_storage_path: Path, agent_name: str) -> Path:
    """The agent's workspace: `<base_storage_path>/agents/<agent_name>/workspace/`, as in MindRoom."""
    return workspace_dir(Path(base_storage_path), agent_name)


def private_instance_state_root_for_requester(
    base_storage_path: Path, *, requester_id: str, agent_name: str, worker_scope: str | None, runtime_paths: Any
) -> Path | None:
    """Where a requester's private copy of an agent keeps its state: None, since there are no private copies."""
    del base_storage_path, requester_id, agent_name, worker_scope, runtime_paths
    return None


def get_tool_execution_identity() -> ToolExecutionIdentity | None:
    """The identity the running tool call runs as (agent, requester, conversation); None outside a tool call."""
    context = get_tool_runtime_context()
    return build_execution_identity_from_runtime_context(context) if context is not None else None
