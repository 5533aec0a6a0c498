"""MindRoom's resolution of an agent's workspace, for plugins written against MindRoom.

Every configured agent has one workspace here, `<data>/agents/<agent>/workspace/` (MindRoom's folder), whoever
it serves: a state folder of a private copy (MindRoom's `state_storage_path`) has no counterpart, so it never
moves the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.private_files import private_dir
from mindroom.tool_system.worker_routing import agent_workspace_root_path

__all__ = ["ResolvedAgentWorkspace", "resolve_agent_workspace_from_state_path"]


@dataclass(frozen=True, slots=True)
class ResolvedAgentWorkspace:
    """An agent's workspace folder (`root`, also `lexical_root`) and its `context_files` there."""

    root: Path
    lexical_root: Path
    context_files: tuple[Path, ...] = ()
    file_memory_path: Path | None = None


def resolve_agent_workspace_from_state_path(
    agent_name: str,
    config: Config,
    *,
    runtime_paths: RuntimePaths,
    state_storage_path: Path,
    use_state_storage_path: bool,
    create: bool = False,
) -> ResolvedAgentWorkspace | None:
    """The workspace of a configured agent (None for a name the config has no agent of); `create` makes it."""
    del state_storage_path, use_state_storage_path
    agent = config.agents.get(agent_name)
    if agent is None:
        return None
    root = agent_workspace_root_path(runtime_paths.storage_root, agent_name)
    if create:
        private_dir(root)
    return ResolvedAgentWorkspace(root, root, tuple(root / name for name in agent.context_files))
