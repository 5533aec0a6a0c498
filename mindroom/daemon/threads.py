"""Threads people find again, for one run: `!tag`, `!resolve` and `!reopen` in the command table."""

from __future__ import annotations

from mindroom.bots.commands.table import CommandTable
from mindroom.bots.commands.threads import thread_commands

__all__ = ["start_threads"]


def start_threads(commands: CommandTable) -> None:
    """Register the thread commands into `commands`."""
    for command in thread_commands():
        commands.register(command)
