"""Chat commands (`!help`, `!hooks`, `!plugins`, and what the orchestrator registers), answered in the thread.

The table is filled by whoever owns a command: the built-ins here, `!schedule` and `!reload-plugins` by
the orchestrator. Dispatching a command imports none of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial

from mindroom.bots.runtime import Entity, LiveState
from mindroom.hooks.context import MessageEnvelope
from mindroom.hooks.telemetry import hooks_report_text
from mindroom.logging_config import get_logger

__all__ = [
    "LEAVE_DELAY_S",
    "Command",
    "CommandHandler",
    "CommandTable",
    "handle_command",
    "is_administrator",
    "is_command",
]

logger = get_logger(__name__)

LEAVE_DELAY_S = 0.5

CommandHandler = Callable[[Entity, LiveState, MessageEnvelope, str], Awaitable[str]]
"""Answer one command: the entity answering, the live state of the turn, the message, the text after the name."""


@dataclass(frozen=True, slots=True)
class Command:
    """A chat command: its name (without `!`), a one-line description for `!help`, and its handler.

    In a room the router does not manage, one agent answers a command, unless `every_agent` is set
    (`!leave`: each agent there acts on it).
    """

    name: str
    description: str
    run: CommandHandler
    every_agent: bool = False


def is_administrator(live: LiveState, envelope: MessageEnvelope, command: str) -> bool:
    """Whether the person a message speaks for is one of `administrators` (every command that asks, asks here).

    That person is the requester: the sender, or, for a message one of the daemon's own accounts posts for
    someone (a schedule, a hook's message), the person it names in `com.mindroom.original_sender`; ingress
    reads that key from the daemon's own accounts only, so no outside account (a bridge's relay bot) can
    claim to speak for someone else. Relaying thus neither gives nor takes the right: the relaying account's
    own listing counts for nothing, and an administrator relayed is still one. Access to the agents is
    decided on the same person. A refusal is logged with both ids.
    """
    if envelope.requester_id in live.config.administrators:
        return True
    logger.info(
        "command refused: not an administrator",
        requester=envelope.requester_id,
        sender=envelope.sender_id,
        command=command,
    )
    return False


def is_command(body: str) -> bool:
    """True for text that starts with `!` followed by a letter (a command, not an exclamation)."""
    text = body.lstrip()
    return len(text) > 1 and text[0] == "!" and text[1].isalpha()


class CommandTable:
    """The commands the router answers, by name; `with_builtins()` starts with `!help`, `!hooks`, `!plugins`."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    @classmethod
    def with_builtins(cls, *, is_managed: Callable[[str], bool]) -> CommandTable:
        """A table holding the built-in commands; `is_managed` tells the rooms config names (`!leave` stays there)."""
        table = cls()
        table.register(Command("help", "this help", table._help))
        table.register(Command("hooks", "the hook table: order, settings, calls, failures, breaker state", _hooks))
        table.register(Command("plugins", "the loaded plugins", _plugins))
        table.register(
            Command(
                "leave",
                "agents leave this room (rooms they were invited into)",
                partial(_leave, is_managed),
                every_agent=True,
            )
        )
        return table

    def register(self, command: Command) -> None:
        """Add a command (names are case-insensitive); a second command of the same name is a programming error."""
        name = command.name.lower()
        if name in self._commands:
            msg = f"command !{command.name} is registered twice"
            raise ValueError(msg)
        self._commands[name] = command

    def get(self, name: str) -> Command | None:
        """The command of this name (case-insensitive), if any."""
        return self._commands.get(name.lower())

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda command: command.name))

    async def _help(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        agents = "\n".join(
            f"- {a.display_name} ({name}): {a.role or 'no role given'}" for name, a in live.config.responders().items()
        )
        commands = "\n".join(f"- !{command.name}: {command.description}" for command in self)
        return f"Agents here:\n{agents}\n\nMention an agent to ask it directly.\n\nCommands:\n{commands}"


async def _hooks(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    registry = live.registry
    extra = registry.room_policies.describe(envelope.room_id, registry.fixed_plugins)
    extra += [f"Isolated plugin {p.name}: worker restarts={p.restarts}" for p in registry.isolated.plugins.values()]
    return "\n".join([hooks_report_text(registry), "", *extra]) if extra else hooks_report_text(registry)


async def _plugins(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    if not live.plugins:
        return "No plugins are loaded."
    lines = []
    for plugin in live.plugins:
        count = sum(1 for hook in live.registry.all_hooks() if hook.plugin_name == plugin.name)
        lines.append(f"- {plugin.name} ({plugin.path.name}): {count} hooks")
    return "Plugins:\n" + "\n".join(lines)


async def _leave(
    is_managed: Callable[[str], bool], entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str
) -> str:
    if is_managed(envelope.room_id):
        return "This room is set up by the daemon's config; remove it from config.yaml to close it."
    entity.spawn(_leave_after_answer(entity, envelope.room_id), "leave")
    return "Leaving this room. Invite me again any time."


async def _leave_after_answer(entity: Entity, room_id: str) -> None:
    await asyncio.sleep(LEAVE_DELAY_S)  # the goodbye is sent first
    await entity.leave(room_id)
    logger.info("left a room on request", agent=entity.name, room_id=room_id)


async def handle_command(entity: Entity, live: LiveState, envelope: MessageEnvelope, table: CommandTable) -> None:
    """Answer a `!command` in the message's thread; unknown commands get a pointer to `!help`."""
    name, _, args = envelope.body.lstrip()[1:].partition(" ")
    command = table.get(name)
    if command is None:
        reply = f"Unknown command !{name}. Try !help."
    else:
        reply = await command.run(entity, live, envelope, args.strip())
    await entity.client.send_message(
        envelope.room_id, reply, thread_root=envelope.resolved_thread_id, reply_to=envelope.source_event_id
    )
    logger.info("command answered", agent=entity.name, command=name)
