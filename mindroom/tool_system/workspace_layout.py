"""Where agents' workspaces live: `<data>/agents/<agent>/workspace/`, as in MindRoom's data directory.

A data directory laid out before this (`<data>/workspaces/<agent>/`) is moved over once, when a daemon takes
the state's lock, so no two daemons move it at the same time: each agent's folder is renamed into place
(the same file system, nothing copied), unless the new place already holds a workspace, which then wins and
the old folder stays where it is, said in the log.
"""

from __future__ import annotations

import os
from pathlib import Path

from mindroom.logging_config import get_logger
from mindroom.private_files import private_dir
from mindroom.state.private_roots import PRIVATE_INSTANCES_DIRNAME

__all__ = [
    "AGENTS_DIRNAME",
    "OLD_WORKSPACES_DIRNAME",
    "WORKSPACE_DIRNAME",
    "data_root_of",
    "move_old_workspaces",
    "workspace_dir",
]

logger = get_logger(__name__)

AGENTS_DIRNAME = "agents"
WORKSPACE_DIRNAME = "workspace"
OLD_WORKSPACES_DIRNAME = "workspaces"


def workspace_dir(storage_root: Path, agent_name: str) -> Path:
    """`<storage_root>/agents/<agent_name>/workspace/`: the only folder an agent's file and shell tools work in."""
    return Path(storage_root).resolve() / AGENTS_DIRNAME / agent_name / WORKSPACE_DIRNAME


def data_root_of(workspace: Path) -> Path | None:
    """The data directory a workspace laid out by `workspace_dir` (or a private agent's copy, below
    `<data>/private_instances/`) is in; None for a folder laid out otherwise."""
    # A private root may itself be laid out like either (`private.root: agents/x/workspace`, `private_instances/x`):
    # the topmost private folder is the data directory's.
    for folder in reversed(workspace.parents):
        if folder.name == PRIVATE_INSTANCES_DIRNAME:
            return folder.parent
    if workspace.name == WORKSPACE_DIRNAME and workspace.parent.parent.name == AGENTS_DIRNAME:
        return workspace.parent.parent.parent
    return None


def move_old_workspaces(storage_root: Path) -> list[str]:
    """Move `<data>/workspaces/<agent>/` folders to their place under `agents/`; the agents moved."""
    old_root = Path(storage_root) / OLD_WORKSPACES_DIRNAME
    if not old_root.is_dir() or old_root.is_symlink():
        return []
    moved: list[str] = []
    for old in sorted(old_root.iterdir()):
        if not old.is_dir() or old.is_symlink():
            continue
        new = workspace_dir(storage_root, old.name)
        if new.exists():
            logger.warning("old workspace left in place", agent=old.name, old=str(old), workspace=str(new))
            continue
        private_dir(new.parent)
        os.rename(old, new)
        moved.append(old.name)
    if moved:
        logger.info("workspaces moved", agents=moved, root=str(Path(storage_root) / AGENTS_DIRNAME))
    if not any(old_root.iterdir()):
        old_root.rmdir()
    return moved
