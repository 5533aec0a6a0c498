"""The built-in `thread_move` tool (MindRoom's name): carry a thread's gist into another room, with a link back.

The agent posts, in a room it is in and the person it acts for may use it in, a new message holding a link to
the original thread, its summary (when it has one) and its latest messages; the thread's tags are copied to
it. The original thread gets a notice linking to the copy and is marked resolved. A thread of an encrypted
room is never carried into a room that is not encrypted.
"""

from __future__ import annotations

from urllib.parse import quote

from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_reader import thread_messages
from mindroom.matrix.thread_summaries import is_summary, latest_summary
from mindroom.matrix.thread_tags import RESOLVED_TAG, ThreadTagError
from mindroom.tool_system.builtin.matrix_access import agent_room
from mindroom.tool_system.builtin.parts import tool_payload
from mindroom.tool_system.builtin.thread_tags import tag_store, thread_root
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["GIST_MESSAGES", "move_thread", "permalink", "thread_move_tools"]

GIST_MESSAGES = 20
"""How many of the thread's latest messages the copy holds."""
_LINE_CHARS = 300


def permalink(room_id: str, event_id: str, via: str) -> str:
    """A matrix.to link to an event (rooms of recent versions name no server, so one is given)."""
    return f"https://matrix.to/#/{quote(room_id, safe='')}/{quote(event_id, safe='')}?via={quote(via, safe='')}"


async def _encrypted(client: RoomAccount, room_id: str) -> bool:
    return await client.get_room_state(room_id, "m.room.encryption", "") is not None


async def move_thread(room_id: str, thread_id: str | None = None) -> str:
    """Carry the current (or given) thread's gist into another room you are in, with a link back.

    The copy starts a new thread there with the thread's summary and latest messages and its tags; the
    original thread gets a link to the copy and is marked resolved.

    Args:
        room_id: The target room: its ID, alias or configured name.
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
    """
    target = agent_room(room_id)
    caller, client = target.caller, target.client
    if target.is_current:
        raise ToolError("the thread is already in that room")
    root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
    if await _encrypted(client, caller.room_id) and not await _encrypted(client, target.room_id):
        raise ToolError("a thread of an encrypted room is not carried into a room that is not encrypted")
    trusted = frozenset(target.desk.user_ids().values())
    events = await thread_messages(client, caller.room_id, root)
    if not events:
        raise ToolError(f"no thread {root} in this room")
    summary = latest_summary(events, trusted)
    messages = [event for event in events if not is_summary(event, trusted)]
    via = client.user_id.partition(":")[2]
    link = permalink(caller.room_id, root, via)
    lines = [f"🧵 Moved from {link} ({len(messages)} messages)"]
    if summary is not None:
        lines.append(f"Summary: {summary.text}")
    shown = messages[-GIST_MESSAGES:]
    if len(shown) < len(messages):
        lines.append(f"… {len(messages) - len(shown)} earlier messages in the original thread")
    lines += [f"{event.sender}: {str(event.content.get('body') or '')[:_LINE_CHARS]}" for event in shown]
    new_root = await client.send_message(target.room_id, "\n".join(lines))
    copy_link = permalink(target.room_id, new_root, via)
    warnings: list[str] = []
    _, store = tag_store(caller)
    copied: list[str] = []
    try:
        for tag, record in (await store.thread_tags(caller.room_id, root)).items():
            if tag != RESOLVED_TAG:
                await store.add(target.room_id, new_root, tag, caller.requester_id, record.note)
                copied.append(tag)
    except ThreadTagError as error:
        warnings.append(f"tags not all copied: {error}")
    latest = messages[-1].event_id if messages else root
    await client.send_message(
        caller.room_id, f"Moved to {copy_link}", thread_root=root, reply_to=latest, msgtype="m.notice"
    )
    try:
        await store.add(caller.room_id, root, RESOLVED_TAG, caller.requester_id)
    except ThreadTagError as error:
        warnings.append(f"the original thread is not marked resolved: {error}")
    return tool_payload(
        "thread_move", "ok", room_id=target.room_id, thread_id=new_root, link=copy_link, copied=len(shown),
        tags_copied=copied, warnings=warnings,
    )  # fmt: skip


def thread_move_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `thread_move` group: `move_thread`."""
    return (ToolSpec(name="move_thread", function=move_thread),)
