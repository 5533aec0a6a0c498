"""Where a private agent keeps one requester's copy of its state: `<data>/private_instances/<scope>/<agent>/`.

An agent with `private: {per: ...}` gets a state root per requester (`per: user`) or per requester and agent
(`per: user_agent`). The scope folder is named from a digest of an unambiguous encoding of who it belongs to,
so an odd Matrix id (slashes, dots, `..`, unicode) never becomes part of a path, two requesters never share a
folder, and a folder name says nothing about whose it is. Below the state root the agent's workspace (its
private root, `private.root`, default `<agent>_data`) is made on first use, 0700, and seeded from
`private.template_dir` once: the copy is made beside it and renamed into place, so a half-copied template is
never seen and a second turn never copies again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from mindroom.config.agent import AgentPrivateConfig
from mindroom.constants import RuntimePaths, resolve_config_relative_path
from mindroom.logging_config import get_logger
from mindroom.private_files import private_dir

__all__ = [
    "PRIVATE_INSTANCES_DIRNAME",
    "PRIVATE_SCOPES",
    "contained_workspace",
    "ensure_private_workspace",
    "private_root_name",
    "private_scope_key",
    "private_state_root",
    "private_template",
    "private_workspace",
    "requester_workspace",
]

logger = get_logger(__name__)

PRIVATE_INSTANCES_DIRNAME = "private_instances"
PRIVATE_SCOPES = ("user", "user_agent")
_SAFE_COMPONENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # no leading dot: never `.` or `..`


def _component(agent_name: str) -> str:
    if not _SAFE_COMPONENT.fullmatch(agent_name):
        msg = f"agent name {agent_name!r} cannot name a folder of private state"
        raise ValueError(msg)
    return agent_name


def private_scope_key(per: str, requester_id: str, agent_name: str) -> str:
    """The scope folder's name for `requester_id` (and `agent_name` with `per: user_agent`): `<per>-<digest>`."""
    if per not in PRIVATE_SCOPES:
        msg = f"private.per must be one of {', '.join(PRIVATE_SCOPES)} (not {per!r})"
        raise ValueError(msg)
    if not requester_id:
        msg = "a private agent's state needs the requester's id"
        raise ValueError(msg)
    owner = [requester_id, agent_name] if per == "user_agent" else [requester_id]
    digest = hashlib.sha256(json.dumps(["private-v1", per, *owner]).encode("utf-8")).hexdigest()[:32]
    return f"{per.replace('_', '-')}-{digest}"


def private_state_root(storage_root: Path, per: str, requester_id: str, agent_name: str) -> Path:
    """`<storage_root>/private_instances/<scope key>/<agent>/`, without creating it."""
    scope = private_scope_key(per, requester_id, agent_name)
    return Path(storage_root).resolve() / PRIVATE_INSTANCES_DIRNAME / scope / _component(agent_name)


def private_root_name(agent_name: str, root: str | None) -> str:
    """The workspace's path below a private state root: `private.root`, else `<agent>_data`."""
    return root or f"{agent_name}_data"


def private_workspace(state_root: Path, agent_name: str, root: str | None) -> Path:
    """The private workspace (file and shell tools, context files, MEMORY.md) in one private state root."""
    return state_root / private_root_name(agent_name, root)


def private_template(agent_name: str, private: AgentPrivateConfig, paths: RuntimePaths) -> Path | None:
    """The folder `private.template_dir` names (links followed), None when unset; `ValueError` naming the key when
    it is in the data directory or holds it (`.` with the default data directory beside the config): its secrets
    (crypto stores, tokens, the API key) would be copied into every requester's workspace."""
    if not private.template_dir:
        return None
    template = resolve_config_relative_path(private.template_dir, paths)
    data = Path(paths.storage_root).resolve()
    if template.is_relative_to(data) or data.is_relative_to(template):
        msg = f"agents.{agent_name}.private.template_dir: {private.template_dir!r} is or holds the data directory"
        raise ValueError(msg)
    return template


def _seed(workspace: Path, template: Path | None) -> None:
    """Make `workspace` holding a copy of `template` (regular files and folders; links are left out)."""
    private_dir(workspace.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{workspace.name}.seeding-", dir=workspace.parent))
    try:
        if template is not None and template.is_dir():
            shutil.copytree(template, staging, symlinks=True, ignore=_links, dirs_exist_ok=True)
        staging.chmod(0o700)
        try:
            os.rename(staging, workspace)
        except OSError:  # another turn made it first: theirs stands
            if not workspace.is_dir():
                raise
            return
        logger.info("private workspace made", seeded=template is not None)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _links(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if os.path.islink(os.path.join(folder, name))}


def ensure_private_workspace(workspace: Path, template: Path | None = None) -> Path:
    """`workspace`, made (0700) and seeded from `template` on its first use; a folder already there is kept."""
    if workspace.is_dir() and not workspace.is_symlink():
        return workspace
    if workspace.is_symlink() or workspace.exists():
        msg = f"private workspace {workspace} is not a folder"
        raise ValueError(msg)
    if template is not None and not template.is_dir():
        logger.warning("private.template_dir is not a folder; workspace made empty", template_dir=str(template))
        template = None
    _seed(workspace, template)
    return workspace


def contained_workspace(state_root: Path, agent_name: str, root: str | None) -> tuple[Path, Path]:
    """The private workspace in `state_root`, links followed and as written; `ValueError` naming `private.root`
    when a link leads it out of the state root (a folder on its way replaced by a link to elsewhere)."""
    lexical = private_workspace(state_root, agent_name, root)
    resolved = lexical.resolve()
    if not resolved.is_relative_to(state_root.resolve()):
        msg = f"agents.{agent_name}.private.root: {lexical} leads out of the private state root"
        raise ValueError(msg)
    return resolved, lexical


def requester_workspace(storage_root: Path, agent_name: str, private: AgentPrivateConfig, requester_id: str) -> Path:
    """The workspace of `requester_id`'s copy of private agent `agent_name` (links followed, kept inside the copy's
    state root, else `ValueError`), without creating it."""
    state = private_state_root(storage_root, private.per, requester_id, agent_name)
    return contained_workspace(state, agent_name, private.root)[0]
