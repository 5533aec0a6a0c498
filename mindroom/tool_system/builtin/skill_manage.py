"""The built-in `skill_manage` tool (MindRoom's name): an agent writes skills into its own workspace.

A skill is a folder `skills/<name>/` of the agent's workspace holding `SKILL.md` (YAML front matter whose
`name` is the folder's name and whose `description` says when to use it, then the instructions) and any
support files. Every path goes through the workspace's confined walk and quota (`file_tools.Workspace`);
a file holding a credential is refused, and a replaced or removed file's previous text is kept under
`skills/.history/`. Skills the config names stay the operator's: plugin skills are never written. The
skills written here are in the agent's workspace (its file tools read them); they are not added to its
system prompt, which offers the skills its `skills:` list names.
"""

from __future__ import annotations

import os
import re
import time
from typing import Literal

import yaml

from mindroom.logging_config import redact_text
from mindroom.tool_system.confined_open import open_folder_below, open_root
from mindroom.tool_system.file_tools import Workspace
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["SkillAction", "skill_manage_tools"]

SkillAction = Literal["create", "patch", "edit", "write_file", "remove_file"]
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_MAX_DESCRIPTION = 60


def _check_skill_md(name: str, content: str) -> None:
    match = _FRONT.match(content)
    meta = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(meta, dict) or meta.get("name") != name:
        raise ToolError(f"SKILL.md must start with YAML front matter whose name is {name!r}")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip() or len(description) > _MAX_DESCRIPTION:
        raise ToolError(f"the front matter needs a description of at most {_MAX_DESCRIPTION} characters")


def _check_secret(text: str) -> None:
    if redact_text(text) != text:
        raise ToolError("the file holds what looks like a credential; skills never keep secrets")


def _relative(name: str, file_path: str | None) -> str:
    if not _NAME.match(name):
        raise ToolError("a skill name is lowercase letters, digits and hyphens")
    inner = (file_path or "SKILL.md").strip()
    if inner.startswith("/") or ".." in inner.split("/") or not inner:
        raise ToolError(f"{file_path!r} must be a path inside the skill's folder")
    return f"skills/{name}/{inner}"


def skill_manage_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `skill_manage` group: `skill_manage(action, name, ...)` in the agent's workspace."""
    workspace = Workspace(env.workspace, env.settings.file)

    def existing(path: str) -> str | None:
        try:
            return workspace.read(path)
        except ToolError:
            return None

    def keep_history(path: str, old: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        workspace.write(f"skills/.history/{path.removeprefix('skills/')}.{stamp}", old)

    def write(path: str, content: str, *, new: bool = False) -> str:
        _check_secret(content)
        old = existing(path)
        if new and old is not None:
            raise ToolError(f"{path} exists; use edit or patch")
        if old is not None:
            keep_history(path, old)
        env.workspace.mkdir(parents=True, exist_ok=True, mode=0o700)
        return workspace.write(path, content)

    def remove(path: str) -> str:
        old = existing(path)
        if old is None:
            raise ToolError(f"{path} does not exist")
        if path.endswith("/SKILL.md"):
            raise ToolError("SKILL.md is the skill itself; edit it instead")
        keep_history(path, old)
        *folders, name = path.split("/")
        root = open_root(env.workspace, may_be_link=True)
        try:
            folder = open_folder_below(root, folders)
            try:
                os.unlink(name, dir_fd=folder)
            finally:
                os.close(folder)
        finally:
            os.close(root)
        return f"removed {path}"

    def skill_manage(
        action: SkillAction,
        name: str,
        content: str | None = None,
        old_string: str | None = None,
        new_string: str | None = None,
        file_path: str | None = None,
        file_content: str | None = None,
        replace_all: bool = False,
    ) -> str:
        """Create or change a skill in your workspace's skill library (skills/<name>/).

        A new SKILL.md starts with YAML front matter whose name is the folder's name and whose description is
        one sentence of at most 60 characters saying when to use it. Files holding a credential are refused; a
        replaced or removed file's previous version is kept under skills/.history/.

        Args:
            action: "create" a skill from content, "patch" old_string to new_string in SKILL.md or file_path,
                "edit" replaces SKILL.md with content, "write_file" writes file_content to file_path, and
                "remove_file" deletes file_path.
            name: The skill's folder name, lowercase and hyphenated.
            content: The complete SKILL.md, for create or edit.
            old_string: The exact text to replace, for patch (once, unless replace_all).
            new_string: The replacement text, for patch ("" deletes the match).
            file_path: A support file such as "references/topic.md"; omit it for SKILL.md.
            file_content: The complete support file, for write_file.
            replace_all: Replace every occurrence of old_string.
        """
        if action in ("create", "edit"):
            if content is None:
                raise ToolError(f"{action} needs content")
            path = _relative(name, None)
            _check_skill_md(name, content)
            return write(path, content, new=action == "create")
        if action == "write_file":
            if not file_path or file_content is None:
                raise ToolError("write_file needs file_path and file_content")
            return write(_relative(name, file_path), file_content)
        if action == "remove_file":
            return remove(_relative(name, file_path))
        if action == "patch":
            path = _relative(name, file_path)
            old = existing(path)
            if old is None or not old_string:
                raise ToolError(f"patch needs an existing {path} and old_string")
            count = old.count(old_string)
            if count == 0 or (count > 1 and not replace_all):
                raise ToolError(f"old_string occurs {count} times; it must occur once (or pass replace_all)")
            patched = old.replace(old_string, new_string or "", -1 if replace_all else 1)
            if path.endswith("/SKILL.md"):
                _check_skill_md(name, patched)
            return write(path, patched)
        raise ToolError("action is create, patch, edit, write_file or remove_file")

    return (ToolSpec(name="skill_manage", function=skill_manage, in_thread=True),)
