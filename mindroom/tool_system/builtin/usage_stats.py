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

__all__ = ["admin_scope", "get_all_usage", "get_my_usage", "settings_problems", "usage_stats_tools"]

_TOOL = "usage_stats"


def _defaults_entry(config: Any) -> dict[str, Any] | None:
    for item in config.defaults.tools if config is not None else ():
        if isinstance(item, dict) and _TOOL in item:
            return item[_TOOL] if isinstance(item[_TOOL], dict) else {}
    return None


def settings_problems(config: Any, agent_name: str) -> list[str]:
    """What is wrong with the `usage_stats` settings this agent gets, each naming its key (empty when nothing is).

    `admin_scope` is the only setting, a boolean, and is taken per agent only (as in MindRoom): in
    `defaults.tools` it would give every agent everyone's usage."""
    problems = []
    shared = _defaults_entry(config)
    if shared is not None and "admin_scope" in shared:
        problems.append("defaults.tools: 'usage_stats': admin_scope is taken per agent only (agents.<name>.tools)")
    agent = config.agents.get(agent_name) if config is not None else None
    entry = next((e for e in agent.tool_entries() if e.name == _TOOL), None) if agent is not None else None
    for key, value in (entry.overrides if entry is not None else {}).items():
        where = f"agents.{agent_name}.tools: 'usage_stats'"
        if key != "admin_scope":
            problems.append(f"{where}: setting {key!r} is not a setting of this tool (allowed: admin_scope)")
        elif not isinstance(value, bool):
            problems.append(f"{where}: setting 'admin_scope' must be true or false")
    return problems


def admin_scope(config: Any, agent_name: str) -> bool:
    """Whether the operator gave this agent's own `usage_stats` entry `admin_scope: true` (and nothing is amiss)."""
    if settings_problems(config, agent_name):
        return False
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
    problems = settings_problems(caller.config, caller.agent_name)
    if problems:
        return tool_payload(_TOOL, "error", message="; ".join(problems))
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
