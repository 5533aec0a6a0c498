"""Memory and knowledge for one run of the daemon: the `TurnMind` made at start, with `!memory` registered."""

from __future__ import annotations

from mindroom.bots.commands.memory import memory_command
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.turn_mind import TurnMind
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths

__all__ = ["start_mind"]


async def start_mind(paths: RuntimePaths, session_url: str | None, config: Config, commands: CommandTable) -> TurnMind:
    """A run's `TurnMind`, its knowledge bases started (indexing in the background), `!memory` in the table."""
    mind = TurnMind(paths, session_url)
    await mind.apply(config)
    commands.register(memory_command(mind))
    return mind
