"""`mindroom.tool_system.tool_hooks`: where tool calls meet hooks, at the 2026 plugin API's import path.

Every tool call goes through `call_tool` (the `tool:before_call` gate, the tool, `tool:after_call`). For
`tool:environment`, `collect_tool_environment` runs the hooks for one call and `bind_tool_environment`
makes the merged result what `current_tool_environment()` returns while the call runs, for the shell
tool to apply to the commands it starts.

`_call_tool(func, args, *, tool_name, agent_name)` runs the tool's body once the gate let the call
through, inside its `tool:environment`. `call_tool` calls whatever the attribute holds at that moment,
so a plugin that replaces it at import (MindRoom 2026.10's agent-vault-bridge does, to route calls
through its broker) wraps every later tool call: built-in, plugin, threaded and isolated tools alike. A
declined call never reaches it; an exception of the tool passes through it.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Awaitable, Callable
from typing import Any

from mindroom.hooks.context import ToolAfterCallContext, ToolBeforeCallContext, ToolEnvironment, ToolEnvironmentContext
from mindroom.tool_system.calls import ToolBodyRunner, call_tool, declined_result
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


class _ToolHooksModule(types.ModuleType):
    """This module, whose `_call_tool` is the function `call_tool` runs each tool body through.

    The tool path lives in `calls`, which this module imports; the property hands a plugin's replacement
    over to it, so plain `tool_hooks._call_tool = wrapper` re-routes every later call.
    """

    @property
    def _call_tool(self) -> Callable[..., Awaitable[Any]]:
        return ToolBodyRunner.current

    @_call_tool.setter
    def _call_tool(self, replacement: Callable[..., Awaitable[Any]]) -> None:
        ToolBodyRunner.current = replacement


sys.modules[__name__].__class__ = _ToolHooksModule
