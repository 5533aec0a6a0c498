"""MindRoom's resolution of where one agent runs and keeps its files, for plugins written against MindRoom.

Every agent here is shared: there are no private per-requester copies and no worker processes, so an agent
resolves to the same folders whoever asks, as MindRoom resolves a non-private agent. Its workspace is
`<data>/agents/<agent>/workspace/` (its file and shell tools work there, `MEMORY.md` is there with file memory) and
its sessions are kept in `<data>/sessions/<agent>.db`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mindroom.ai.sessions.history import SESSIONS_DIRNAME
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.worker_routing import ToolExecutionIdentity, WorkerScope
from mindroom.workspaces import ResolvedAgentWorkspace, resolve_agent_workspace_from_state_path

__all__ = [
    "ResolvedAgentExecution",
    "ResolvedAgentRuntime",
    "ResolvedAgentStorage",
    "resolve_agent_execution",
    "resolve_agent_runtime",
    "resolve_agent_storage",
]


@dataclass(frozen=True, slots=True)
class ResolvedAgentExecution:
    """Who one agent runs for: the caller's identity as given; no worker scope or key, since there are no workers."""

    agent_name: str
    execution_identity: ToolExecutionIdentity | None
    execution_scope: WorkerScope | None = None
    worker_key: str | None = None

    @property
    def is_private(self) -> bool:
        """Whether this is a private copy of the agent: never here."""
        return False


@dataclass(frozen=True, slots=True)
class ResolvedAgentStorage:
    """Where one agent's state is: `state_root` and `session_state_root` are both `<data>/sessions/`, which holds
    every agent's session database (`<agent>.db`), not a folder of this agent's own."""

    execution: ResolvedAgentExecution
    state_root: Path
    session_state_root: Path


@dataclass(frozen=True, slots=True)
class ResolvedAgentRuntime:
    """One agent's folders: its state (as `ResolvedAgentStorage`), its workspace, where its file and shell tools
    work (the workspace), and where its file memory is (the workspace, None unless its memory backend is `file`)."""

    execution: ResolvedAgentExecution
    state_root: Path
    session_state_root: Path
    workspace: ResolvedAgentWorkspace | None
    tool_base_dir: Path | None
    file_memory_root: Path | None


def _known_agent(agent_name: str, config: Config) -> None:
    if agent_name not in config.agents:
        msg = f"no agent {agent_name!r} in the config (agents: {', '.join(sorted(config.agents)) or 'none'})"
        raise ValueError(msg)


def resolve_agent_execution(
    agent_name: str, config: Config, runtime_paths: RuntimePaths, execution_identity: ToolExecutionIdentity | None
) -> ResolvedAgentExecution:
    """Who a configured agent runs for; `ValueError` naming the agent when the config has none of that name."""
    del runtime_paths
    _known_agent(agent_name, config)
    return ResolvedAgentExecution(agent_name, execution_identity)


def resolve_agent_storage(
    agent_name: str, config: Config, runtime_paths: RuntimePaths, execution_identity: ToolExecutionIdentity | None
) -> ResolvedAgentStorage:
    """Where a configured agent's state is, without creating anything."""
    execution = resolve_agent_execution(agent_name, config, runtime_paths, execution_identity)
    sessions = Path(runtime_paths.storage_root).resolve() / SESSIONS_DIRNAME
    return ResolvedAgentStorage(execution, sessions, sessions)


def resolve_agent_runtime(
    agent_name: str,
    config: Config,
    runtime_paths: RuntimePaths,
    execution_identity: ToolExecutionIdentity | None,
    *,
    create: bool = False,
) -> ResolvedAgentRuntime:
    """A configured agent's folders, the same for every requester; `create` makes its workspace (0700)."""
    storage = resolve_agent_storage(agent_name, config, runtime_paths, execution_identity)
    workspace = resolve_agent_workspace_from_state_path(
        agent_name,
        config,
        runtime_paths=runtime_paths,
        state_storage_path=storage.state_root,
        use_state_storage_path=False,
        create=create,
    )
    root = workspace.root if workspace is not None else None
    file_memory = root if config.memory_backend(agent_name) == "file" else None
    return ResolvedAgentRuntime(
        storage.execution, storage.state_root, storage.session_state_root, workspace, root, file_memory
    )
