"""Skills: folders with a `SKILL.md`, shipped by plugins, offered to the agents whose `skills:` list names them.

A plugin manifest's `skills` entries are folders; each is a skill itself (it holds a `SKILL.md`) or holds
skill folders (one level down). A skill's name is the `name` of the `SKILL.md` front matter, else its
folder's name; its description is the front matter's `description`, else the first heading, else the
first line of text. An agent is offered exactly the skills its `skills:` list names: their name,
description and full instructions are added to its system prompt. Other skills are invisible to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.config.main import Config
    from mindroom.plugins.loader import Plugin

__all__ = [
    "MAX_SKILL_CHARS",
    "SKILL_FILENAME",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "build_skill_catalog",
    "parse_skill",
    "skill_folders",
    "skill_prompt",
]

logger = get_logger(__name__)

SKILL_FILENAME = "SKILL.md"
MAX_SKILL_CHARS = 20_000
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SkillError(MindroomError):
    """A skill folder cannot be used: unreadable or malformed `SKILL.md`, a bad name, or a duplicate name."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its name, what it is for, its instructions (the `SKILL.md` body), and where it came from."""

    name: str
    description: str
    instructions: str
    path: Path
    plugin: str


def _front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"{path}: the front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError(f"{path}: the front matter must be a mapping")
    return data, text[match.end() :]


def parse_skill(folder: Path, plugin: str = "") -> Skill:
    """Read `<folder>/SKILL.md` into a `Skill`; `SkillError` when it cannot be read or names itself badly."""
    path = folder / SKILL_FILENAME
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"{path}: cannot read: {exc}") from None
    meta, body = _front_matter(text, path)
    name = str(meta.get("name") or folder.name).strip()
    if not _SKILL_NAME.match(name):
        raise SkillError(f"{path}: skill name {name!r} must be 1-64 of letters, digits, '_', '.', '-'")
    description = str(meta.get("description") or "").strip()
    if not description:
        heading = _HEADING.search(body)
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        description = heading.group(1).strip() if heading else (lines[0] if lines else name)
    return Skill(name, " ".join(description.split()), body.strip(), folder, plugin)


def skill_folders(root: Path) -> list[Path]:
    """`root` when it is a skill itself, else the skill folders directly below it, by name."""
    if (root / SKILL_FILENAME).is_file():
        return [root]
    if not root.is_dir():
        return []
    return [child for child in sorted(root.iterdir()) if child.is_dir() and (child / SKILL_FILENAME).is_file()]


@dataclass(frozen=True, slots=True, eq=False)
class SkillCatalog:
    """Every skill the loaded plugins offer, by name."""

    skills: Mapping[str, Skill] = field(default_factory=dict)
    _prompts: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_plugins(cls, plugins: Sequence[Plugin]) -> SkillCatalog:
        """Read the skills of every plugin; `SkillError` naming both plugins when two skills share a name."""
        skills: dict[str, Skill] = {}
        for plugin in plugins:
            for root in plugin.skill_dirs:
                for folder in skill_folders(root):
                    skill = parse_skill(folder, plugin.name)
                    other = skills.get(skill.name)
                    if other is not None:
                        msg = (
                            f"skill {skill.name!r} is defined by plugin {other.plugin!r} and by plugin {plugin.name!r}"
                        )
                        raise SkillError(msg)
                    skills[skill.name] = skill
        return cls(skills)

    def unknown(self, wanted: Iterable[str]) -> list[str]:
        """The names in `wanted` that no plugin offers."""
        return [name for name in wanted if name not in self.skills]

    def for_agent(self, wanted: Iterable[str]) -> tuple[Skill, ...]:
        """The skills a `skills:` list names, in list order (unknown names skipped)."""
        return tuple(self.skills[name] for name in dict.fromkeys(wanted) if name in self.skills)

    def instructions(self, wanted: Sequence[str]) -> tuple[str, ...]:
        """The system-prompt instructions offering exactly these skills (empty when none apply; memoized)."""
        key = tuple(wanted)
        cached = self._prompts.get(key)
        if cached is None:
            prompt = skill_prompt(self.for_agent(key))
            cached = (prompt,) if prompt else ()
            self._prompts[key] = cached
        return cached


def skill_prompt(skills: Sequence[Skill]) -> str:
    """The instructions block that offers these skills to the model ("" for none)."""
    if not skills:
        return ""
    parts = [
        "<skills>",
        "You have the skills below. When a request matches a skill's description, follow its instructions.",
    ]
    for skill in skills:
        body = skill.instructions
        if len(body) > MAX_SKILL_CHARS:
            body = body[:MAX_SKILL_CHARS] + "\n[skill instructions truncated]"
        parts.append(f'<skill name="{skill.name}">')
        parts.append(f"<description>{skill.description}</description>")
        parts.append(f"<instructions>\n{body}\n</instructions>")
        parts.append("</skill>")
    parts.append("</skills>")
    return "\n".join(parts)


def build_skill_catalog(config: Config, plugins: Sequence[Plugin], *, strict: bool = True) -> SkillCatalog:
    """The plugins' skills, checked against every agent's `skills:` list.

    Two skills with one name are always an error. An agent naming an unknown skill is an error when
    `strict`, else (some plugin failed to load, and the skill may be one of its) a warning, and it is skipped.
    """
    catalog = SkillCatalog.from_plugins(plugins)
    missing = [
        f"agents.{agent_name}.skills: unknown skill {name!r}"
        for agent_name, agent in config.agents.items()
        for name in catalog.unknown(agent.skills)
    ]
    if missing and strict:
        raise SkillError("\n".join(missing))
    for problem in missing:
        logger.warning("agent names a skill that is not available", problem=problem)
    return catalog
