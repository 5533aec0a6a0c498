"""`!tag`, `!resolve`, `!reopen`: label a thread and mark it done from chat, in the thread itself.

- `!tag` lists the thread's tags (outside a thread: the room's tagged threads).
- `!tag <name> [note]` (or `!tag add <name> [note]`) adds a tag; `!tag remove <name>` takes it off.
- `!resolve` marks the thread resolved; `!reopen` opens it again.
- `!summary` writes the thread's summary now, with the room's summary model.

Tags are kept in the room's state (`mindroom.matrix.thread_tags`), written by the account that answers, for
the person who asked, who must be allowed to change thread tags in the room. When the agents' `thread_tags`
entries name tags, a tag must be one of them (their vocabularies together).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

from mindroom.bots.commands.table import Command
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.thread_summaries import ThreadSummaries, summary_model
from mindroom.hooks.context import MessageEnvelope
from mindroom.matrix.thread_tags import RESOLVED_TAG, ThreadTagError, ThreadTagStore, normalize_tag
from mindroom.tool_system.spec import ToolError

__all__ = ["thread_commands"]

_USAGE = "Usage: !tag | !tag <name> [note] | !tag remove <name> (in a thread)"
_IN_THREAD = "Use this inside a thread: it acts on the thread it is sent in."


def _store(entity: Entity) -> ThreadTagStore:
    return ThreadTagStore(entity.client)


def _listing(tags: dict[str, object]) -> str:
    return ", ".join(f"`{name}`" for name in tags) if tags else "no tags"


async def _tag(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    from mindroom.tool_system.builtin.thread_tags import configured_tags

    store, room_id, root = _store(entity), envelope.room_id, envelope.resolved_thread_id
    words = args.split()
    try:
        if not words:
            if root is None:
                threads = await store.room_tags(room_id)
                lines = [f"- {thread}: {_listing(dict(tags))}" for thread, tags in threads.items()]
                return "Tagged threads here:\n" + "\n".join(lines) if lines else "No thread here has tags."
            return f"This thread has {_listing(dict(await store.thread_tags(room_id, root)))}."
        if root is None:
            return _IN_THREAD
        verb = words[0].lower()
        if verb in {"remove", "rm", "del"}:
            if len(words) != 2:
                return _USAGE
            removed = await store.remove(room_id, root, words[1], envelope.requester_id)
            name = normalize_tag(words[1])
            return f"Removed `{name}`." if removed else f"This thread has no tag `{name}`."
        if verb == "add":
            words = words[1:]
        if not words:
            return _USAGE
        name = normalize_tag(words[0])
        if name == RESOLVED_TAG:
            return "Use !resolve to mark a thread resolved."
        allowed = configured_tags(live.config, live.config.agents)
        if allowed is not None and name not in allowed:
            return f"`{name}` is not one of this room's tags: {', '.join(f'`{tag}`' for tag in sorted(allowed))}."
        await store.add(room_id, root, name, envelope.requester_id, " ".join(words[1:]) or None)
        return f"Tagged `{name}`. This thread has {_listing(dict(await store.thread_tags(room_id, root)))}."
    except (ThreadTagError, ToolError) as error:
        return f"❌ {error}"


async def _resolution(entity: Entity, envelope: MessageEnvelope, *, resolved: bool) -> str:
    root = envelope.resolved_thread_id
    if root is None:
        return _IN_THREAD
    store = _store(entity)
    try:
        if resolved:
            await store.add(envelope.room_id, root, RESOLVED_TAG, envelope.requester_id)
            return "✅ This thread is resolved."
        if not await store.remove(envelope.room_id, root, RESOLVED_TAG, envelope.requester_id):
            return "This thread is not resolved."
        return "This thread is open again."
    except ThreadTagError as error:
        return f"❌ {error}"


async def _resolve(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    return await _resolution(entity, envelope, resolved=True)


async def _reopen(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    return await _resolution(entity, envelope, resolved=False)


async def _summary(
    summaries: ThreadSummaries,
    room_keys: Callable[[str], Collection[str]],
    entity: Entity,
    live: LiveState,
    envelope: MessageEnvelope,
    args: str,
) -> str:
    root = envelope.resolved_thread_id
    if root is None:
        return _IN_THREAD
    model = summary_model(live.config, envelope.room_id, room_keys(envelope.room_id), None)
    if model is None:
        return "No summary model is set for this room (defaults.thread_summary_model or room_thread_summary_models)."
    sent = await summaries.summarize(live.config, entity.client, envelope.room_id, root, model, force=True)
    if sent is None:
        return "❌ The summary could not be written; see the daemon log."
    return f"📝 Summary written ({sent.message_count} messages)."


def thread_commands(summaries: ThreadSummaries, room_keys: Callable[[str], Collection[str]]) -> tuple[Command, ...]:
    """`!tag`, `!resolve`, `!reopen` and `!summary`, for the orchestrator to register into the command table."""
    return (
        Command("tag", "this thread's tags; !tag <name> [note] adds one, !tag remove <name> takes it off", _tag),
        Command("resolve", "mark this thread resolved", _resolve),
        Command("reopen", "open this resolved thread again", _reopen),
        Command("summary", "write this thread's summary now", partial(_summary, summaries, room_keys)),
    )
