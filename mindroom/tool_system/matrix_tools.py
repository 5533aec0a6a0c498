"""The built-in `matrix` tool: post a message to a room (or a thread in it) that the agent has joined."""

from __future__ import annotations

from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["MATRIX_TOOL_NAMES", "MAX_MESSAGE_CHARS", "matrix_tools"]

MATRIX_TOOL_NAMES = ("send_matrix_message",)
MAX_MESSAGE_CHARS = 20000


def matrix_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `matrix` group: `send_matrix_message(text, room_id=None, thread_id=None)`."""

    def resolve_room(room: str | None) -> tuple[str, bool]:
        bound = get_runtime_context()
        current = bound.room_id if bound is not None else None
        if not room:
            if current is None:
                raise ToolError("there is no current room; name one with room_id")
            return current, True
        room_id = env.room_aliases().get(room, room)
        if room_id not in env.joined_rooms():
            raise ToolError(f"you are not in the room {room!r}")
        return room_id, room_id == current

    async def send_matrix_message(text: str, room_id: str | None = None, thread_id: str | None = None) -> str:
        """Post a message in a Matrix room you are in.

        Without room_id the message goes to the current conversation (its thread, if it has one).

        Args:
            text: The message text (Markdown is shown as plain text).
            room_id: A room id like "!abc:server" or a room name from the config; default: this room.
            thread_id: The root event id of a thread to post in; default: this conversation's thread
                when posting to this room, otherwise the room itself.
        """
        if env.send_message is None:
            raise ToolError("sending Matrix messages is not available here")
        if not text.strip():
            raise ToolError("the message is empty")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ToolError(f"the message is longer than {MAX_MESSAGE_CHARS} characters")
        target, is_current = resolve_room(room_id)
        if thread_id is None and is_current:
            bound = get_runtime_context()
            thread_id = bound.thread_id if bound is not None else None
        event_id = await env.send_message(target, text, thread_id or None)
        where = f"thread {thread_id} of {target}" if thread_id else target
        return f"sent to {where} as {event_id}"

    return (ToolSpec(name="send_matrix_message", function=send_matrix_message),)
