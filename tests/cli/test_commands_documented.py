"""The README's command table names every `mindroom` command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from typer.main import get_command

from mindroom.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands(command: Any, prefix: str) -> list[str]:
    """`prefix` for a command, or the full line of each command under a group (typer's own click's classes)."""
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        return [prefix]
    return [line for name, sub in sorted(subcommands.items()) for line in _commands(sub, f"{prefix} {name}")]


def test_readme_command_table_lists_every_command():
    rows = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `mindroom ")]
    named = {match for row in rows for match in re.findall(r"`(mindroom [a-z -]+?)(?: [A-Z]|`| --| \[)", row)}

    missing = [line for line in _commands(get_command(app), "mindroom") if line not in named]

    assert missing == [], f"add a row for each to the README's command table: {missing}"
