"""MindRoom's resolution of an agent's workspace, for plugins written against MindRoom.

A shared agent has one workspace, `<data>/agents/<agent>/workspace/` (MindRoom's folder), whoever it serves; a
state folder given for it never moves it. A private agent's workspace is its private root (`private.root`, default
`<agent>_data`) inside the state root of one requester's copy (MindRoom's `state_storage_path`, as
`private_instance_state_root_for_requester` gives it), with `private.context_files` and, with file memory, its
`MEMORY.md` there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.private_files import private_dir
from mindroom.state.private_roots import contained_workspace, ensure_private_workspace, private_template
from mindroom.tool_system.worker_routing import agent_workspace_root_path

__all__ = ["ResolvedAgentWorkspace", "resolve_agent_workspace_from_state_path"]


@dataclass(frozen=True, slots=True)
class ResolvedAgentWorkspace:
    """An agent's workspace folder (`root`, also `lexical_root`), its context files there, and its file memory's
    folder (None unless its memory backend is `file`)."""

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
    """The workspace of a configured agent (None for a name the config has no agent of); `create` makes it.

    A private agent's needs the state root of one requester's copy (`use_state_storage_path`), else `ValueError`;
    `create` then makes it and seeds it from `private.template_dir` the first time."""
    agent = config.agents.get(agent_name)
    if agent is None:
        return None
    memory = config.memory_backend(agent_name) == "file"
    private = agent.private
    if private is None:
        root = agent_workspace_root_path(runtime_paths.storage_root, agent_name)
        if create:
            private_dir(root)
        return ResolvedAgentWorkspace(
            root, root, tuple(root / name for name in agent.context_files), root if memory else None
        )
    if not use_state_storage_path:
        msg = f"agents.{agent_name}.private: a private agent's workspace is one requester's (give its state root)"
        raise ValueError(msg)
    root, lexical = contained_workspace(Path(state_storage_path).expanduser(), agent_name, private.root)
    if create:
        ensure_private_workspace(root, private_template(agent_name, private, runtime_paths))
    files = tuple(root / name for name in private.context_files or ())
    return ResolvedAgentWorkspace(root, lexical, files, root if memory else None)
