"""The built-in `stop_reply` tool (MindRoom's name): stop the answer another agent is streaming in this conversation.

The stop acts for the person the turn speaks for, as if they had reacted 🛑 on that answer: it takes effect
only when that person may talk to the agent in this room, and only on an answer being streamed here now.
"""

from __future__ import annotations

from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["stop_agent_reply", "stop_reply_tools"]


async def stop_agent_reply(agent_name: str) -> str:
    """Stop the reply another agent or team is writing in this room and thread.

    The stop acts for the user you are working for, exactly as if they reacted 🛑 on that reply, so it only
    takes effect when that user may use the target agent.

    Args:
        agent_name: Name of the agent or team whose reply to stop.
    """
    caller = tool_caller()
    name = agent_name.strip()
    if name == caller.agent_name:
        return tool_payload("stop_reply", "error", agent=name, message="You cannot stop your own reply.")
    rooms = daemon_parts().rooms
    if rooms is None:
        return tool_payload("stop_reply", "error", message="Stopping replies is not available in this daemon.")
    if not caller.requester_id or not rooms.may_reach(caller.requester_id, caller.room_id, name):
        return tool_payload(
            "stop_reply", "error", agent=name, message="A reply can only be stopped on behalf of a user who may use it."
        )
    stopped = rooms.stop_reply(name, caller.room_id, caller.thread_id)
    if stopped is None:
        return tool_payload(
            "stop_reply", "error", agent=name, message=f"{name} has no reply in progress in this conversation."
        )
    return tool_payload(
        "stop_reply", "ok", agent=name, room_id=caller.room_id, thread_id=caller.thread_id, reply_event_id=stopped
    )


def stop_reply_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `stop_reply` group: `stop_agent_reply(agent_name)`."""
    return (ToolSpec(name="stop_agent_reply", function=stop_agent_reply),)
