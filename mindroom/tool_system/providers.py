"""`ToolProvider`: a named set of tools in the catalogue (a built-in group, a plugin, a toolkit, an MCP server)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["ToolProvider"]


@dataclass(frozen=True, slots=True)
class ToolProvider:
    """A named set of tools: a built-in group, or a plugin's tools.

    A `dynamic` provider's tool names are known only once it is built (an agno toolkit, an MCP server):
    an agent naming it gets whatever its build returns.
    """

    name: str
    kind: str
    tool_names: tuple[str, ...]
    build: Callable[[AgentToolEnvironment], tuple[ToolSpec, ...]]
    dynamic: bool = False

    @property
    def label(self) -> str:
        """How errors name this provider, e.g. `plugin 'weather'`."""
        return f"{self.kind} {self.name!r}"
