"""The built-in `thread_tags` and `thread_resolution` tools (MindRoom's names): label threads and mark them done.

Tags live in the room's state (`mindroom.matrix.thread_tags`), so they outlast restarts and every client
reads them. A tool acts for the person the turn speaks for: that person must be allowed to change thread
tags in the room. An agent's `thread_tags` entry may name the room's vocabulary,
`- thread_tags: {tags: [bug, blocked, needs-review]}`; a tag outside it is refused (without one, any tag
name is taken). `resolved` belongs to `thread_resolution`, not to the vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_tags import RESOLVED_TAG, TagRecord, ThreadTagError, ThreadTagStore, normalize_tag
from mindroom.tool_system.builtin.parts import ToolCaller, daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = [
    "THREAD_TAGS_SETTINGS",
    "configured_tags",
    "list_thread_tags",
    "reopen_thread",
    "resolve_thread",
    "tag_store",
    "tag_thread",
    "thread_resolution_tools",
    "thread_root",
    "thread_tags_tools",
    "untag_thread",
]

THREAD_TAGS_SETTINGS = {"tags": "string[]"}
"""The settings an agent's `thread_tags` entry takes: the tags it may set (the operator's, in config.yaml)."""


def configured_tags(config: Any, agents: Iterable[str]) -> frozenset[str] | None:
    """The tags `agents`' `thread_tags` entries allow together; None when none of them names a vocabulary."""
    vocabulary: set[str] | None = None
    for name in agents:
        agent = config.agents.get(name) if config is not None else None
        for entry in agent.tool_entries() if agent is not None else ():
            if entry.name != "thread_tags" or not entry.overrides:
                continue
            unknown = [key for key in entry.overrides if key not in THREAD_TAGS_SETTINGS]
            tags = entry.overrides.get("tags", [])
            if unknown or not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
                raise ToolError(f"agents.{name}.tools: 'thread_tags' takes only tags: a list of tag names")
            vocabulary = (vocabulary or set()) | {normalize_tag(tag) for tag in tags}
    return frozenset(vocabulary) if vocabulary is not None else None


def tag_store(caller: ToolCaller) -> tuple[RoomAccount, ThreadTagStore]:
    """The calling agent's account and the tag store writing through it (or the router, which made the room)."""
    desk = daemon_parts().rooms
    if desk is None:
        raise ToolError("Matrix rooms are not available in this daemon")
    client = desk.client(caller.agent_name)
    if client is None:
        raise ToolError("your Matrix account is not running")
    router = desk.client(ROUTER_AGENT_NAME)
    writers = [client] + ([router] if router is not None and router is not client else [])
    return client, ThreadTagStore(client, writers)


async def thread_root(client: RoomAccount, room_id: str, thread_id: str | None, current: str | None) -> str:
    """The root of the thread `thread_id` names (a root or a reply in it), else the turn's thread."""
    if not thread_id:
        if current is None:
            raise ToolError("thread_id is needed outside a thread")
        return current
    event = await client.get_event(room_id, thread_id)
    if event is None:
        raise ToolError(f"no event {thread_id} in this room")
    relation = event.content.get("m.relates_to")
    if isinstance(relation, Mapping) and relation.get("rel_type") == "m.thread":
        root = relation.get("event_id")
        if isinstance(root, str) and root:
            return root
    return str(event.event_id)


def _tags_out(tags: Mapping[str, TagRecord]) -> dict[str, dict[str, Any]]:
    return {name: record.content() for name, record in tags.items()}


async def tag_thread(tag: str, thread_id: str | None = None, note: str | None = None) -> str:
    """Add a tag to the current (or given) thread.

    Args:
        tag: The tag, e.g. "bug" or "needs-review" (lower-case letters, digits, hyphens).
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
        note: An optional note kept with the tag.
    """
    caller = tool_caller()
    client, store = tag_store(caller)
    try:
        name = normalize_tag(tag)
        if name == RESOLVED_TAG:
            raise ToolError("use resolve_thread (thread_resolution) to mark a thread resolved")
        allowed = configured_tags(caller.config, [caller.agent_name])
        if allowed is not None and name not in allowed:
            raise ToolError(f"tag {name!r} is not in this room's vocabulary: {', '.join(sorted(allowed))}")
        root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
        await store.add(caller.room_id, root, name, caller.requester_id, note)
        tags = await store.thread_tags(caller.room_id, root)
    except ThreadTagError as error:
        return tool_payload("thread_tags", "error", action="tag", message=str(error))
    return tool_payload("thread_tags", "ok", action="tag", room_id=caller.room_id, thread_id=root, tags=_tags_out(tags))


async def untag_thread(tag: str, thread_id: str | None = None) -> str:
    """Remove a tag from the current (or given) thread.

    Args:
        tag: The tag to remove.
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
    """
    caller = tool_caller()
    client, store = tag_store(caller)
    try:
        name = normalize_tag(tag)
        root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
        removed = await store.remove(caller.room_id, root, name, caller.requester_id)
        tags = await store.thread_tags(caller.room_id, root)
    except ThreadTagError as error:
        return tool_payload("thread_tags", "error", action="untag", message=str(error))
    return tool_payload(
        "thread_tags",
        "ok",
        action="untag",
        removed=removed,
        room_id=caller.room_id,
        thread_id=root,
        tags=_tags_out(tags),
    )


async def list_thread_tags(thread_id: str | None = None, tag: str | None = None) -> str:
    """List the tags of the current (or given) thread, or with `tag` the room's threads carrying it.

    Args:
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
        tag: List every thread of this room with this tag instead.
    """
    caller = tool_caller()
    client, store = tag_store(caller)
    try:
        if tag:
            name = normalize_tag(tag)
            threads = {root: _tags_out(tags) for root, tags in (await store.room_tags(caller.room_id)).items()}
            matching = {root: tags for root, tags in threads.items() if name in tags}
            return tool_payload("thread_tags", "ok", room_id=caller.room_id, tag=name, threads=matching)
        root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
        tags = await store.thread_tags(caller.room_id, root)
    except ThreadTagError as error:
        return tool_payload("thread_tags", "error", action="list", message=str(error))
    return tool_payload("thread_tags", "ok", room_id=caller.room_id, thread_id=root, tags=_tags_out(tags))


async def _resolution(thread_id: str | None, *, resolved: bool) -> str:
    caller = tool_caller()
    client, store = tag_store(caller)
    action = "resolve" if resolved else "reopen"
    try:
        root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
        if resolved:
            await store.add(caller.room_id, root, RESOLVED_TAG, caller.requester_id)
        else:
            await store.remove(caller.room_id, root, RESOLVED_TAG, caller.requester_id)
    except ThreadTagError as error:
        return tool_payload("thread_resolution", "error", action=action, message=str(error))
    return tool_payload(
        "thread_resolution", "ok", action=action, room_id=caller.room_id, thread_id=root, resolved=resolved
    )


async def resolve_thread(thread_id: str | None = None) -> str:
    """Mark the current (or given) thread resolved.

    Args:
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
    """
    return await _resolution(thread_id, resolved=True)


async def reopen_thread(thread_id: str | None = None) -> str:
    """Reopen the current (or given) thread: it is no longer resolved.

    Args:
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
    """
    return await _resolution(thread_id, resolved=False)


def thread_tags_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `thread_tags` group: `tag_thread`, `untag_thread`, `list_thread_tags`."""
    return tuple(ToolSpec(name=f.__name__, function=f) for f in (list_thread_tags, tag_thread, untag_thread))


def thread_resolution_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `thread_resolution` group: `resolve_thread`, `reopen_thread`."""
    return (
        ToolSpec(name="resolve_thread", function=resolve_thread),
        ToolSpec(name="reopen_thread", function=reopen_thread),
    )
