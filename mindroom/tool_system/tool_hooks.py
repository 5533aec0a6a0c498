"""`mindroom.tool_system.tool_hooks`: where tool calls meet hooks, at the 2026 plugin API's import path.

Every tool call goes through `call_tool` (the `tool:before_call` gate, the tool, `tool:after_call`). For
`tool:environment`, `collect_tool_environment` runs the hooks for one call and `bind_tool_environment`
makes the merged result what `current_tool_environment()` returns while the call runs, for the shell
tool to apply to the commands it starts.

`_call_tool` runs the tool's body once the gate let the call through, inside its `tool:environment`.
`call_tool` looks it up in this module at every call, so a plugin that replaces the attribute at import
(MindRoom 2026.10's agent-vault-bridge does, to route calls through its broker) wraps every tool call
from then on: built-in, plugin, threaded and isolated tools alike. A declined call never reaches it; an
exception of the tool passes through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mindroom.hooks.context import ToolAfterCallContext, ToolBeforeCallContext, ToolEnvironment, ToolEnvironmentContext
from mindroom.tool_system.calls import call_tool, declined_result
from mindroom.tool_system.environment import bind_tool_environment, collect_tool_environment, current_tool_environment

__all__ = [
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolEnvironment",
    "ToolEnvironmentContext",
    "bind_tool_environment",
    "call_tool",
    "collect_tool_environment",
    "current_tool_environment",
    "declined_result",
]


async def _call_tool(
    func: Callable[..., Awaitable[Any]],
    args: dict[str, Any],
    *,
    tool_name: str,
    agent_name: str | None,
) -> Any:
    """Run one tool body, `await func(**args)`: the attribute plugins replace to wrap every tool call."""
    return await func(**args)
