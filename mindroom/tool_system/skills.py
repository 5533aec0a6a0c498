"""`list_skill_listings`, the name MindRoom 2026.10 lists skill folders by, onto this daemon's skill rules.

A listing is a skill's name, description, `SKILL.md` path and origin, read from the given folders by the
rules of `mindroom.plugins.skills` (a folder is a skill or holds skill folders one level down; the name
is the front matter's `name`, else the folder's). A folder whose `SKILL.md` cannot be used is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mindroom.logging_config import get_logger
from mindroom.plugins.skills import SKILL_FILENAME, SkillError, parse_skill, skill_folders

__all__ = ["SkillListing", "list_skill_listings"]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class SkillListing:
    """What a skill listing shows: its name, description, `SKILL.md` file, and where it came from."""

    name: str
    description: str
    path: Path
    origin: str
    """`custom` for every folder given here; this daemon has no bundled or per-user skill folders."""


def list_skill_listings(roots: Sequence[Path] | None = None) -> list[SkillListing]:
    """The skills in `roots`, one per name (a later root's skill replaces an earlier one), sorted by name.

    Without `roots` the list is empty: MindRoom then lists its bundled and user skill folders, which do not
    exist here (the skills of loaded plugins are offered to agents by their `skills:` lists).
    """
    by_name: dict[str, SkillListing] = {}
    for root in dict.fromkeys(Path(root).expanduser().resolve() for root in roots or ()):
        for folder in skill_folders(root):
            try:
                skill = parse_skill(folder)
            except SkillError as exc:
                logger.warning("skill folder left out of the listing", path=str(folder), error=str(exc))
                continue
            by_name[skill.name] = SkillListing(skill.name, skill.description, folder / SKILL_FILENAME, "custom")
    return sorted(by_name.values(), key=lambda listing: listing.name.lower())
