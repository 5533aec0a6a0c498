"""`!memory`: a person sees what agents remember about them and has it forgotten; administrators wipe a person.

- `!memory` lists what every agent remembers about the sender, numbered.
- `!memory forget 2` (or `2 5`), `!memory forget all`, `!memory forget <words>` delete the sender's own
  memories: by number in that list, all of them, or those containing the words.
- `!memory wipe @someone:server` deletes every memory of that person (`administrators` only).

Only the sender's memories are ever listed or deleted (an administrator's wipe names its person).
"""

from __future__ import annotations

from mindroom.bots.commands.table import Command, is_administrator
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.turn_mind import TurnMind
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger

__all__ = ["memory_command"]

logger = get_logger(__name__)

_USAGE = "Usage: !memory | !memory forget <number...|all|words> | !memory wipe @user:server (administrators)"


def memory_command(mind: TurnMind) -> Command:
    """`!memory`, for the orchestrator to register into the command table."""

    async def run(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        from mindroom.ai.memory import forget_memories, recall_memories

        where = {"storage_root": mind.paths.storage_root, "database_url": mind.session_url}
        verb, _, rest = args.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb == "wipe":
            if not is_administrator(live, envelope, "memory wipe"):
                return "Only administrators can wipe a person's memories."
            if not rest.startswith("@") or ":" not in rest:
                return _USAGE
            count = await forget_memories(rest, None, **where)  # type: ignore[arg-type]
            logger.info("memories wiped", by=envelope.requester_id, user=rest, count=count)
            return f"Deleted {count} memories of {rest}."
        mine = await recall_memories(envelope.requester_id, agent=None, limit=1000, **where)  # type: ignore[arg-type]
        mine.sort(key=lambda item: (item.agent, -item.updated_at, item.memory_id))
        if verb == "":
            if not mine:
                return "No agent remembers anything about you."
            lines = [f"{number}. [{item.agent}] {item.text}" for number, item in enumerate(mine, start=1)]
            return "What agents remember about you:\n" + "\n".join(lines) + "\n\n!memory forget <number> deletes one."
        if verb != "forget" or not rest:
            return _USAGE
        if rest.lower() == "all":
            chosen = mine
        elif all(part.isdigit() for part in rest.replace(",", " ").split()):
            numbers = {int(part) for part in rest.replace(",", " ").split()}
            chosen = [item for number, item in enumerate(mine, start=1) if number in numbers]
        else:
            chosen = [item for item in mine if rest.lower() in item.text.lower()]
        if not chosen:
            return "No memory of yours matches that."
        count = await forget_memories(envelope.requester_id, [item.memory_id for item in chosen], **where)  # type: ignore[arg-type]
        logger.info("memories forgotten on request", user=envelope.requester_id, count=count)
        return f"Forgotten: {count} {'memory' if count == 1 else 'memories'}."

    return Command("memory", "what agents remember about you; !memory forget <number|all|words>", run)
