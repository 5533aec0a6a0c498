"""MindRoom's resolution of where one agent runs and keeps its files, for plugins written against MindRoom.

A shared agent resolves to the same folders whoever asks: its workspace is `<data>/agents/<agent>/workspace/` (its
file and shell tools work there, `MEMORY.md` is there with file memory). A private agent (`private:`) resolves to
the requester's copy: its state root `<data>/private_instances/<scope>/<agent>/` and the workspace in it. There are
no worker processes, so no worker key; every agent's sessions are kept in `<data>/sessions/<agent>.db`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mindroom.ai.sessions.history import SESSIONS_DIRNAME
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.state.private_roots import PRIVATE_SCOPES
from mindroom.tool_system.worker_routing import (
    ToolExecutionIdentity,
    WorkerScope,
    private_instance_state_root_for_requester,
)
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
    """Who one agent runs for: the caller's identity as given; a private agent's scope is its `private.per` (no
    worker key, since there are no workers)."""

    agent_name: str
    execution_identity: ToolExecutionIdentity | None
    execution_scope: WorkerScope | None = None
    worker_key: str | None = None

    @property
    def is_private(self) -> bool:
        """Whether this is one requester's private copy of the agent."""
        return self.execution_scope in PRIVATE_SCOPES


@dataclass(frozen=True, slots=True)
class ResolvedAgentStorage:
    """Where one agent's state is: `session_state_root` is `<data>/sessions/`, which holds every agent's session
    database (`<agent>.db`); `state_root` is the same for a shared agent, the requester's private state root for a
    private one."""

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
    private = config.agents[agent_name].private
    return ResolvedAgentExecution(agent_name, execution_identity, private.per if private is not None else None)


def resolve_agent_storage(
    agent_name: str, config: Config, runtime_paths: RuntimePaths, execution_identity: ToolExecutionIdentity | None
) -> ResolvedAgentStorage:
    """Where a configured agent's state is, without creating anything."""
    execution = resolve_agent_execution(agent_name, config, runtime_paths, execution_identity)
    sessions = Path(runtime_paths.storage_root).resolve() / SESSIONS_DIRNAME
    if not execution.is_private:
        return ResolvedAgentStorage(execution, sessions, sessions)
    requester = execution_identity.requester_id if execution_identity is not None else None
    root = private_instance_state_root_for_requester(
        runtime_paths.storage_root,
        requester_id=requester or "",
        agent_name=agent_name,
        worker_scope=execution.execution_scope,
        runtime_paths=runtime_paths,
    )
    if root is None:
        msg = f"agents.{agent_name}.private: a private agent's folders are a requester's (no requester given)"
        raise ValueError(msg)
    return ResolvedAgentStorage(execution, root, sessions)


def resolve_agent_runtime(
    agent_name: str,
    config: Config,
    runtime_paths: RuntimePaths,
    execution_identity: ToolExecutionIdentity | None,
    *,
    create: bool = False,
) -> ResolvedAgentRuntime:
    """A configured agent's folders (a private agent's: the requester's copy); `create` makes its workspace (0700,
    a private copy seeded from `private.template_dir` the first time)."""
    storage = resolve_agent_storage(agent_name, config, runtime_paths, execution_identity)
    workspace = resolve_agent_workspace_from_state_path(
        agent_name,
        config,
        runtime_paths=runtime_paths,
        state_storage_path=storage.state_root,
        use_state_storage_path=storage.execution.is_private,
        create=create,
    )
    root = workspace.root if workspace is not None else None
    file_memory = root if config.memory_backend(agent_name) == "file" else None
    return ResolvedAgentRuntime(
        storage.execution, storage.state_root, storage.session_state_root, workspace, root, file_memory
    )
