"""The built-in matrix tool: posts only to rooms the agent is in, by default into the current thread."""

import pytest

from mindroom.hooks import HookRegistry
from mindroom.tool_system.matrix_tools import matrix_tools
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError

pytestmark = pytest.mark.asyncio


def send_tool(tmp_path, sent, rooms=("!here:hs", "!other:hs")):
    async def send(room_id, text, thread_id):
        sent.append((room_id, text, thread_id))
        return f"$event{len(sent)}"

    env = AgentToolEnvironment(
        "helper",
        tmp_path,
        send_message=send,
        joined_rooms=lambda: set(rooms),
        room_aliases=lambda: {"lobby": "!other:hs"},
    )
    (spec,) = matrix_tools(env)
    return spec.function


def turn(room_id="!here:hs", thread_id="$root"):
    return bind_runtime_context(ToolRuntimeContext(HookRegistry.empty(), "helper", room_id, thread_id))


async def test_matrix_tool_posts_into_the_current_thread_by_default(tmp_path):
    sent = []
    with turn():
        result = await send_tool(tmp_path, sent)("hello")

    assert sent == [("!here:hs", "hello", "$root")]
    assert result == "sent to thread $root of !here:hs as $event1"


async def test_matrix_tool_posts_to_another_joined_room_at_room_level(tmp_path):
    sent = []
    tool = send_tool(tmp_path, sent)
    with turn():
        await tool("by id", room_id="!other:hs")
        await tool("by config name", room_id="lobby")
        await tool("in a thread there", room_id="!other:hs", thread_id="$t2")

    assert sent == [
        ("!other:hs", "by id", None),
        ("!other:hs", "by config name", None),
        ("!other:hs", "in a thread there", "$t2"),
    ]


async def test_matrix_tool_refuses_rooms_the_agent_is_not_in(tmp_path):
    sent = []
    with turn(), pytest.raises(ToolError, match="not in the room"):
        await send_tool(tmp_path, sent)("psst", room_id="!elsewhere:hs")

    assert sent == []


async def test_matrix_tool_needs_a_room_outside_a_turn(tmp_path):
    sent = []
    with pytest.raises(ToolError, match="no current room"):
        await send_tool(tmp_path, sent)("hello")
    with pytest.raises(ToolError, match="empty"):
        await send_tool(tmp_path, sent)("  ", room_id="!here:hs")
