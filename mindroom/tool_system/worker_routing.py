"""MindRoom's paths of where an agent works, for plugins written against MindRoom.

A shared agent has one workspace, `<data>/agents/<agent>/workspace/` (its file and shell tools work in it); a
private agent (`private:`) has a state root per requester, `<data>/private_instances/<scope>/<agent>/`
(`mindroom.state.private_roots`). There are no worker processes to route either to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mindroom.state.private_roots import PRIVATE_SCOPES, private_state_root
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
"""MindRoom's scopes of a worker (who shares one); here `user` and `user_agent` name a private agent's `private.per`."""


def agent_workspace_root_path(base_storage_path: Path, agent_name: str) -> Path:
    """The agent's workspace: `<base_storage_path>/agents/<agent_name>/workspace/`, as in MindRoom."""
    return workspace_dir(Path(base_storage_path), agent_name)


def private_instance_state_root_for_requester(
    base_storage_path: Path, *, requester_id: str, agent_name: str, worker_scope: str | None, runtime_paths: Any
) -> Path | None:
    """Where `requester_id`'s private copy of `agent_name` keeps its state (`worker_scope` is its `private.per`):
    `<base_storage_path>/private_instances/<scope>/<agent_name>/`; None for a scope that is not private."""
    del runtime_paths
    if worker_scope not in PRIVATE_SCOPES or not requester_id:
        return None
    return private_state_root(Path(base_storage_path), worker_scope, requester_id, agent_name)


def get_tool_execution_identity() -> ToolExecutionIdentity | None:
    """The identity the running tool call runs as (agent, requester, conversation); None outside a tool call."""
    context = get_tool_runtime_context()
    return build_execution_identity_from_runtime_context(context) if context is not None else None
