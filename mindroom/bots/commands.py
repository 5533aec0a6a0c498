"""Built-in chat commands (`!help`, `!hooks`, `!plugins`, `!reload-plugins`, `!schedule`), answered in the thread."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.bots.bot import EntityBot

__all__ = ["COMMANDS", "handle_command", "is_command"]

logger = get_logger(__name__)

CommandHandler = Callable[["EntityBot", MessageEnvelope, str], Awaitable[str]]


def is_command(body: str) -> bool:
    """True for text that starts with `!` followed by a letter (a command, not an exclamation)."""
    text = body.lstrip()
    return len(text) > 1 and text[0] == "!" and text[1].isalpha()


async def _help(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    config = bot.runtime.config
    agents = "\n".join(f"- {a.display_name} ({name}): {a.role or 'no role given'}" for name, a in config.agents.items())
    commands = "\n".join(f"- !{name}: {description}" for name, (description, _) in sorted(COMMANDS.items()))
    return f"Agents here:\n{agents}\n\nMention an agent to ask it directly.\n\nCommands:\n{commands}"


async def _hooks(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    from mindroom.daemon.hooks_snapshot import hooks_report_text

    return hooks_report_text(bot.runtime.registry)


async def _plugins(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    plugins = bot.runtime.plugins
    if not plugins:
        return "No plugins are loaded."
    lines = []
    for plugin in plugins:
        count = sum(1 for hook in bot.runtime.registry.all_hooks() if hook.plugin_name == plugin.name)
        lines.append(f"- {plugin.name} ({plugin.path.name}): {count} hooks")
    return "Plugins:\n" + "\n".join(lines)


async def _reload_plugins(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    reloader = bot.runtime.reloader
    if reloader is None:
        return "Reloading is not available in this daemon."
    logger.info("reload requested in chat", requester=envelope.requester_id, room_id=envelope.room_id)
    # Answered once the swap is decided: restarting an agent waits for in-flight turns, this one included.
    outcome = await asyncio.shield(reloader.request("!reload-plugins"))
    return outcome.summary()


async def _schedule(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    from mindroom.daemon.scheduling.scheduler import schedule_command

    return await schedule_command(bot, envelope, args)


COMMANDS: dict[str, tuple[str, CommandHandler]] = {
    "help": ("this help", _help),
    "hooks": ("the hook table: order, settings, calls, failures, breaker state", _hooks),
    "plugins": ("the loaded plugins", _plugins),
    "reload-plugins": ("reload config.yaml and every plugin now, and say what changed", _reload_plugins),
    "schedule": (
        "post a message later: `in 10 minutes ...`, `every day at 9:00 ...`, a cron line; `list`, `cancel ID`",
        _schedule,
    ),
}


async def handle_command(bot: EntityBot, envelope: MessageEnvelope) -> None:
    """Answer a `!command` in the message's thread; unknown commands get a pointer to `!help`."""
    name, _, args = envelope.body.lstrip()[1:].partition(" ")
    entry = COMMANDS.get(name.lower())
    if entry is None:
        reply = f"Unknown command !{name}. Try !help."
    else:
        reply = await entry[1](bot, envelope, args.strip())
    await bot.client.send_message(
        envelope.room_id, reply, thread_root=envelope.resolved_thread_id, reply_to=envelope.source_event_id
    )
    logger.info("command answered", command=name)
