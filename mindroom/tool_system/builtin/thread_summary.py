"""The built-in `thread_summary` tool (MindRoom's name): write or read the summary shown for a thread.

A written summary is a notice in the thread as automatic summaries are (`mindroom.matrix.thread_summaries`),
with the model `manual`; pinned (the default), it keeps automatic summaries from replacing it.
"""

from __future__ import annotations

from mindroom.matrix.thread_reader import thread_messages
from mindroom.matrix.thread_summaries import is_summary, latest_summary, send_summary
from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.builtin.thread_tags import tag_store, thread_root
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["get_thread_summary", "set_thread_summary", "thread_summary_tools"]

_MAX_CHARS = 300


def _trusted() -> frozenset[str]:
    desk = daemon_parts().rooms
    return frozenset(desk.user_ids().values()) if desk is not None else frozenset()


async def set_thread_summary(summary: str, thread_id: str | None = None, pin: bool = True) -> str:
    """Write the one-line summary shown for the current (or given) thread.

    Args:
        summary: Plain text (no Markdown), at most 300 characters.
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
        pin: Keep automatic summaries from replacing this one (default); False lets later ones replace it.
    """
    caller = tool_caller()
    client, _ = tag_store(caller)
    text = " ".join(summary.split())
    if not text or len(text) > _MAX_CHARS:
        raise ToolError(f"a summary is 1 to {_MAX_CHARS} characters of plain text")
    root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
    trusted = _trusted()
    events = await thread_messages(client, caller.room_id, root)
    messages = [event for event in events if not is_summary(event, trusted)]
    latest = messages[-1].event_id if messages else root
    sent = await send_summary(
        client, caller.room_id, root, text, len(messages), "manual", latest_event_id=latest, pinned=pin
    )
    return tool_payload(
        "thread_summary", "ok", action="set", room_id=caller.room_id, thread_id=root, event_id=sent.event_id,
        summary=text, message_count=sent.message_count, pinned=pin,
    )  # fmt: skip


async def get_thread_summary(thread_id: str | None = None) -> str:
    """Read the summary shown for the current (or given) thread.

    Args:
        thread_id: A thread's root or reply event ID in this room; omit for the current thread.
    """
    caller = tool_caller()
    client, _ = tag_store(caller)
    root = await thread_root(client, caller.room_id, thread_id, caller.thread_id)
    found = latest_summary(await thread_messages(client, caller.room_id, root), _trusted())
    if found is None:
        return tool_payload("thread_summary", "ok", room_id=caller.room_id, thread_id=root, summary=None)
    return tool_payload(
        "thread_summary", "ok", room_id=caller.room_id, thread_id=root, summary=found.text,
        message_count=found.message_count, model=found.model, generated_at=found.generated_at, pinned=found.pinned,
    )  # fmt: skip


def thread_summary_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `thread_summary` group: `set_thread_summary`, `get_thread_summary`."""
    return (
        ToolSpec(name="set_thread_summary", function=set_thread_summary),
        ToolSpec(name="get_thread_summary", function=get_thread_summary),
    )
