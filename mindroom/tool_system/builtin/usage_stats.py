"""The built-in `usage_stats` tool (MindRoom's name): what the turns of the person the agent works for spent.

`get_my_usage` reports that person's turns this month and today (tokens, tool calls, cost, by agent and
model). `get_all_usage` reports everyone's, per person: only for an agent whose entry sets
`admin_scope: true` (`tools: [{usage_stats: {admin_scope: true}}]`, the operator's), and only when the person
the turn speaks for is one of `administrators`.
"""

from __future__ import annotations

from typing import Any

from mindroom.tool_system.builtin.parts import ToolCaller, UsageDesk, daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["admin_scope", "get_all_usage", "get_my_usage", "usage_stats_tools"]

_TOOL = "usage_stats"


def admin_scope(config: Any, agent_name: str) -> bool:
    """Whether the operator gave this agent's `usage_stats` entry `admin_scope: true`."""
    agent = config.agents.get(agent_name) if config is not None else None
    entry = next((e for e in agent.tool_entries() if e.name == _TOOL), None) if agent is not None else None
    return entry is not None and entry.overrides.get("admin_scope") is True


def _desk() -> tuple[UsageDesk | None, ToolCaller]:
    caller = tool_caller(room_needed=False)
    return daemon_parts().usage, caller


async def get_my_usage(include_daily: bool = False) -> str:
    """Get the usage of the user you are working for: turns, tokens, tool calls and cost this month and today.

    Args:
        include_daily: Also list each day of this month.
    """
    desk, caller = _desk()
    if desk is None:
        return tool_payload(_TOOL, "error", message="Usage is not recorded by this daemon.")
    if not caller.requester_id:
        return tool_payload(_TOOL, "error", message="There is no user to report usage for.")
    summary = await desk.summary(caller.requester_id, include_daily=include_daily)
    return tool_payload(_TOOL, "ok", scope="self", requester=caller.requester_id, **summary)


async def get_all_usage(include_daily: bool = False) -> str:
    """Get everyone's usage this month and today, per user (administrators, with admin_scope only).

    Args:
        include_daily: Also list each day of this month.
    """
    desk, caller = _desk()
    if not admin_scope(caller.config, caller.agent_name):
        return tool_payload(_TOOL, "error", message="This agent's usage_stats tool is not set up with admin_scope.")
    administrators = caller.config.administrators if caller.config is not None else []
    if caller.requester_id not in administrators:
        return tool_payload(_TOOL, "error", message="Only administrators can see everyone's usage.")
    if desk is None:
        return tool_payload(_TOOL, "error", message="Usage is not recorded by this daemon.")
    summary = await desk.summary(None, include_daily=include_daily)
    return tool_payload(_TOOL, "ok", scope="all", **summary)


def usage_stats_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `usage_stats` group: `get_my_usage` and `get_all_usage`."""
    return (
        ToolSpec(name="get_my_usage", function=get_my_usage),
        ToolSpec(name="get_all_usage", function=get_all_usage),
    )
