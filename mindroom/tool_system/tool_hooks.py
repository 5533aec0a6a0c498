"""`mindroom.tool_system.tool_hooks`: where tool calls meet hooks, at the 2026 plugin API's import path.

Every tool call goes through `call_tool` (the `tool:before_call` gate, the tool, `tool:after_call`). For
`tool:environment`, `collect_tool_environment` runs the hooks for one call and `bind_tool_environment`
makes the merged result what `current_tool_environment()` returns while the call runs, for the shell
tool to apply to the commands it starts.
"""

from __future__ import annotations

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
