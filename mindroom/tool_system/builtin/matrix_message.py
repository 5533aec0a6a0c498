"""The built-in `matrix_message` tool (MindRoom's name): send, read, edit and react in the agent's rooms.

One function, `matrix_message(action=...)`, as MindRoom's. `send` posts as the agent in the current
conversation (its thread) by default, another thread (`thread_id`), the room timeline (`thread_id="room"`), a
new thread (`new_thread`), or another room the agent is in; with `recipient` the message mentions that agent
or team, which then answers it for the person the turn speaks for. `read` returns a conversation's latest
messages (decrypted where the agent can), `edit` changes one of the agent's own messages, `react` adds a
reaction. Attachments and collapsible extras are not offered here (the `attachments` tool sends files).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from mindroom.constants import ORIGINAL_SENDER_KEY
from mindroom.tool_system.builtin.matrix_access import AgentRoom, RateWindow, agent_room, thread_argument
from mindroom.tool_system.builtin.parts import tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

if TYPE_CHECKING:
    from mindroom.matrix import MatrixEvent

__all__ = ["MAX_MESSAGE_CHARS", "matrix_message", "matrix_message_tools"]

MAX_MESSAGE_CHARS = 20_000
_RATE = RateWindow(12, 30.0)
_TOOL = "matrix_message"
_ROOMS = "/_matrix/client/v3/rooms/"


async def _send(where: AgentRoom, message: str, recipient: str | None, thread: str | None) -> dict[str, Any]:
    mentions: list[str] = []
    extra: dict[str, Any] = {}
    if recipient is not None:
        present = where.desk.agents_in_room(where.room_id)
        user_id = where.desk.user_ids().get(recipient)
        if recipient not in present or user_id is None:
            raise ToolError(f"'{recipient}' is not available in this room; available: {', '.join(present) or 'none'}")
        if recipient == where.caller.agent_name:
            raise ToolError("you cannot send a request to yourself; answer directly")
        mentions.append(user_id)
        extra[ORIGINAL_SENDER_KEY] = where.caller.requester_id  # the recipient answers the person, as they may
    event_id = await where.client.send_message(
        where.room_id, message, thread_root=thread, mentions=mentions or None, extra_content=extra or None
    )
    return {"event_id": event_id, "thread_id": thread, "recipient": recipient}


def _fields(event: MatrixEvent) -> dict[str, Any]:
    return {
        "event_id": event.event_id,
        "sender": event.sender,
        "type": event.type,
        "content": event.content,
        "origin_server_ts": event.origin_server_ts,
    }


def _line(event: dict[str, Any]) -> dict[str, Any]:
    content = event.get("content") or {}
    return {
        "event_id": event.get("event_id"),
        "sender": event.get("sender"),
        "timestamp": event.get("origin_server_ts"),
        "body": content.get("body", "") if isinstance(content, dict) else "",
    }


async def _read(where: AgentRoom, thread: str | None, limit: int) -> list[dict[str, Any]]:
    room = quote(where.room_id, safe="")
    if thread:
        root = quote(thread, safe="")
        path = f"/_matrix/client/v1/rooms/{room}/relations/{root}/m.thread?dir=b&limit={limit}"
    else:
        path = f"{_ROOMS}{room}/messages?dir=b&limit={limit}"
    reply = await where.client.api("GET", path)
    if not reply.ok or not isinstance(reply.body, dict):
        raise ToolError(f"the homeserver refused the read ({reply.error or 'no reply'})")
    events = [e for e in reply.body.get("chunk", []) if isinstance(e, dict)]
    if thread:  # the root is not among its relations
        first = await where.client.get_event(where.room_id, thread)
        if first is not None:
            events.append(_fields(first))
    found: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "m.room.encrypted":
            opened = await where.client.get_event(where.room_id, str(event.get("event_id")))
            event = _fields(opened) if opened is not None else event
        content = event.get("content") or {}
        relation = content.get("m.relates_to") if isinstance(content, dict) else None
        in_thread = isinstance(relation, dict) and relation.get("rel_type") == "m.thread"
        if event.get("type") == "m.room.message" and (thread or not in_thread):
            found.append(_line(event))
    return list(reversed(found))


async def _edit(where: AgentRoom, event_id: str, message: str) -> dict[str, Any]:
    original = await where.client.get_event(where.room_id, event_id)
    if original is None or original.sender != where.client.user_id:
        raise ToolError("you can edit only your own messages")
    edit_id = await where.client.edit_message(where.room_id, event_id, message, thread_root=original.thread_root)
    return {"event_id": edit_id, "edited_event_id": event_id}


async def matrix_message(
    action: Literal["send", "read", "edit", "react"] = "send",
    message: str | None = None,
    recipient: str | None = None,
    room_id: str | None = None,
    thread_id: str | None = None,
    new_thread: bool = False,
    event_id: str | None = None,
    attachments: list[str] | None = None,
    message_extras: list[dict[str, Any]] | None = None,
    limit: int | None = None,
    idempotency_key: str | None = None,
) -> str:
    """Send, read, edit, or react to Matrix messages in rooms you are in.

    `send` and `read` use the current conversation. Set new_thread=True to start a separate thread, thread_id to
    continue another thread, or thread_id="room" for the room timeline. Another room never inherits the current
    thread. Set recipient to an agent or team name (matrix_room(action="agents") lists them) to have it answer.
    edit and react need event_id; react uses message as the emoji (default 👍).

    Args:
        action: send, read, edit, or react.
        message: Text to send or edit, or the reaction emoji.
        recipient: An agent or team of the room to answer the message; send only.
        room_id: Room ID or configured room name; the current room by default.
        thread_id: Thread root ID; the current conversation by default, "room" for the room timeline.
        new_thread: Start a separate thread; send only.
        event_id: The message to edit or react to.
        attachments: Not offered here (the attachments tool sends files).
        message_extras: Not offered here.
        limit: Messages to read, 1-50; default 20.
        idempotency_key: Not offered here (accepted and ignored).
    """
    act = str(action).strip().lower()
    if act not in ("send", "read", "edit", "react"):
        return tool_payload(_TOOL, "error", message="Unsupported action. Use send, read, edit, or react.")
    if attachments or message_extras:
        return tool_payload(_TOOL, "error", message="attachments and message_extras are not offered here.")
    if act != "send" and (recipient is not None or new_thread):
        return tool_payload(_TOOL, "error", message="recipient and new_thread are only supported for send.")
    try:
        where = agent_room(room_id)
        thread = thread_argument(where, thread_id, new_thread=new_thread)
        if act == "read":
            count = max(1, min(int(limit or 20), 50))
            messages = await _read(where, thread, count)
            return tool_payload(_TOOL, "ok", action=act, room_id=where.room_id, thread_id=thread, messages=messages)
        text = (message or ("👍" if act == "react" else "")).strip()
        if not text:
            raise ToolError("message is required")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ToolError(f"the message is longer than {MAX_MESSAGE_CHARS} characters")
        if act in ("edit", "react") and not event_id:
            raise ToolError(f"{act} needs event_id")
        _RATE.take(where)
        if act == "send":
            fields = await _send(where, text, recipient, thread)
        elif act == "edit":
            fields = await _edit(where, str(event_id), text)
        else:
            fields = {"event_id": await where.client.react(where.room_id, str(event_id), text), "reacted_to": event_id}
    except ToolError as error:
        return tool_payload(_TOOL, "error", action=act, message=str(error))
    return tool_payload(_TOOL, "ok", action=act, room_id=where.room_id, **fields)


def matrix_message_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `matrix_message` group: `matrix_message(action, ...)`."""
    return (ToolSpec(name="matrix_message", function=matrix_message),)
