"""Deferred tools (`defer: true` in a `tools:` entry): which names an agent's model is sent, and which it finds
through `dynamic_tools` instead.

A deferred tool's functions stay out of every request until the agent finds them with `tool_search` and
runs them with `call_tool`; `initial: true` sends it anyway. An agent with a deferred tool gets the
`dynamic_tools` group, whether or not its list names it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DYNAMIC_TOOLS", "deferred_names", "visible_tool_names"]

DYNAMIC_TOOLS = "dynamic_tools"


def deferred_names(agent: Any) -> tuple[str, ...]:
    """The names an agent's `tools:` list defers (`defer: true` without `initial: true`)."""
    if agent is None:
        return ()
    return tuple(entry.name for entry in agent.tool_entries() if entry.defer and not entry.initial)


def visible_tool_names(agent: Any) -> tuple[str, ...]:
    """The names whose tools the model is sent: the agent's `tools:` without the deferred ones, and
    `dynamic_tools` when some are deferred."""
    deferred = set(deferred_names(agent))
    if not deferred:
        return tuple(agent.tools)
    return (*(name for name in agent.tools if name not in deferred and name != DYNAMIC_TOOLS), DYNAMIC_TOOLS)
