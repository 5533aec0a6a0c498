"""The project's optional extras, and the one command a hint names to install one: `install_extra_command`.

The project's distribution is named `mindroom`, as MindRoom's own is on the package index, so no hint names
`mindroom[<extra>]`: that would install MindRoom. Running from a checkout (the `mindroom` package imported
from a source tree whose `pyproject.toml` is this project's, as an editable install does), a hint names the
checkout's extra (`pip install -e '<checkout>[postgres]'`); otherwise it names the extra's requirements
themselves, as the installed project declares them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shlex
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "DISTRIBUTION",
    "checkout",
    "checkout_root",
    "declared_extras",
    "extra_requirements",
    "extras_from_requires",
    "install_extra_command",
]

DISTRIBUTION = "mindroom"
"""The project's distribution name in `pyproject.toml` (the same as MindRoom's own on the package index)."""
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _declares_this_project(pyproject: Path) -> bool:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return project.get("name") == DISTRIBUTION and "optional-dependencies" in project


def checkout_root(package_dir: Path) -> Path | None:
    """The source tree holding the `mindroom` package at `package_dir`, or None for an installed copy."""
    root = package_dir.parent
    if (package_dir / "__init__.py").is_file() and _declares_this_project(root / "pyproject.toml"):
        return root
    return None


@functools.cache
def checkout() -> Path | None:
    """The checkout the running daemon's code comes from (an editable install or the tree itself), if any."""
    return checkout_root(_PACKAGE_DIR)


def declared_extras(root: Path | None) -> dict[str, tuple[str, ...]]:
    """Each extra's requirements: from the checkout's `pyproject.toml` at `root`, else the installed metadata."""
    if root is not None:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        return {name: tuple(items) for name, items in project["optional-dependencies"].items()}
    try:
        return extras_from_requires(importlib.metadata.requires(DISTRIBUTION) or [])
    except importlib.metadata.PackageNotFoundError:
        return {}


def extras_from_requires(requires: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each extra's requirements from a distribution's `Requires-Dist` lines (`ddgs; extra == "tools-web"`)."""
    extras: dict[str, list[str]] = {}
    for line in requires:
        requirement, _, marker = line.partition(";")
        found = _EXTRA_MARKER.search(marker)
        if found is not None:
            extras.setdefault(found.group(1), []).append(requirement.strip())
    return {name: tuple(items) for name, items in extras.items()}


@functools.cache
def extra_requirements(extra: str) -> tuple[str, ...]:
    """The requirements the project declares for `extra` (its `pyproject.toml`, or the installed metadata)."""
    return declared_extras(checkout()).get(extra, ())


def install_extra_command(extra: str, packages: Sequence[str] = ()) -> str:
    """The pip command that installs this project's `extra`: the checkout's extra when the running code comes
    from one, else the extra's declared requirements, else `packages` (what the caller knows it needs)."""
    root = checkout()
    if root is not None:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    requirements = extra_requirements(extra) or tuple(packages)
    if requirements:
        return "pip install " + " ".join(shlex.quote(requirement) for requirement in requirements)
    return f"install this project again with its {extra!r} extra"
