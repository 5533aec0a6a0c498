"""The packages a toolkit needs, and the commands that install them into the daemon's own environment.

A toolkit with an extra is installed by the command every hint names for an extra of this project
(`mindroom.config.project_extras.install_extra_command`: the checkout's extra, else its packages); one without
an extra by its packages. `mindroom tools install NAME` runs pip for the running
interpreter with those packages (`install_command`).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable

from mindroom.config.project_extras import (
    DISTRIBUTION,
    checkout,
    checkout_root,
    declared_extras,
    extra_requirements,
    extras_from_requires,
    install_extra_command,
)
from mindroom.tool_system.toolkit_table import AgnoToolkit

__all__ = [
    "DISTRIBUTION",
    "checkout",
    "checkout_root",
    "declared_extras",
    "extra_requirements",
    "extras_from_requires",
    "install_command",
    "install_fix",
    "pip_hint",
    "tool_requirements",
]


def tool_requirements(toolkit: AgnoToolkit) -> tuple[str, ...]:
    """What installing `toolkit` means: its extra's requirements, else the packages it imports."""
    declared = extra_requirements(toolkit.extra) if toolkit.extra is not None else ()
    return declared or tuple(dict.fromkeys(package.pip for package in toolkit.packages))


def pip_hint(toolkit: AgnoToolkit) -> str:
    """The pip command that installs what `toolkit` imports: the checkout's extra, or the packages."""
    if toolkit.extra is not None:
        return install_extra_command(toolkit.extra, tool_requirements(toolkit))
    return "pip install " + " ".join(shlex.quote(requirement) for requirement in tool_requirements(toolkit))


def install_fix(toolkit: AgnoToolkit) -> str:
    """The fix for a missing package: the command that installs it into the daemon's environment."""
    return f"mindroom tools install {toolkit.name} (or: {pip_hint(toolkit)})"


def install_command(requirements: Iterable[str]) -> list[str]:
    """pip for the running interpreter, installing `requirements` into its environment."""
    return [sys.executable, "-m", "pip", "install", *requirements]
