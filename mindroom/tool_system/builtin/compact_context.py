"""The built-in `compact_context` tool (MindRoom's name): fold this conversation's history into a summary now.

The fold is the one compaction before an answer does (`mindroom.bots.compact_now`): the older half of the
conversation's stored history becomes a summary that later turns replay. MindRoom only marks the
conversation for compaction before the next reply; here it happens during the call, so the result says what
was folded, and the next turn sees it.
"""

from __future__ import annotations

from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["compact_context", "compact_context_tools"]


async def compact_context() -> str:
    """Compact this conversation's earlier history into a summary, so later replies carry less of it."""
    caller = tool_caller(room_needed=False)
    desk = daemon_parts().compaction
    if desk is None:
        raise ToolError("compaction is not available in this daemon")
    return await desk.compact(caller)


def compact_context_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `compact_context` group: `compact_context()`."""
    return (ToolSpec(name="compact_context", function=compact_context, timeout_s=300.0),)
