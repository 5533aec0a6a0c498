"""The built-in `dynamic_tools` tool (MindRoom's name): deferred tools, found by search and called through it.

A `tools:` entry with `defer: true` keeps that tool's functions out of what the model is sent with each
request (`visible_tool_names`); `initial: true` sends it anyway. An agent with deferred tools gets
`tool_search` and `call_tool` (whether or not it names `dynamic_tools`): `tool_search` finds deferred
functions by name or keywords and returns their definitions, `call_tool` runs one. A call through
`call_tool` is the deferred function's own call: its `tool:before_call` gates, approval rules and
`tool:after_call` observers see it under its own name, exactly as if the model had called it directly.
Only the agent's own deferred tools can be found or called.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mindroom.tool_system.builtin.deferral import DYNAMIC_TOOLS, deferred_names
from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.calls import call_tool as run_tool_call
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["dynamic_tools"]

_MAX_RESULTS = 20
_WORD = re.compile(r"[a-z0-9]+")
_CALL_TOOL_PARAMETERS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Exact function name from tool_search."},
        "arguments": {"type": "object", "description": "The function's arguments as a JSON object."},
    },
    "required": ["name"],
}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _definition(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "toolkit": spec.toolkit or "",
        "description": spec.description or "",
        "parameters": dict(spec.parameters or {"type": "object", "properties": {}}),
    }


def _score(spec: ToolSpec, words: set[str], query: str) -> int:
    if query == spec.name.lower():
        return 1000
    detail = _words(spec.description or "") | {
        w for p in (spec.parameters or {}).get("properties", {}) for w in _words(p)
    }
    fields = ((8, _words(spec.name)), (4, _words(spec.toolkit or "")), (2, detail))
    return sum(max((weight for weight, found in fields if word in found), default=0) for word in words)


def dynamic_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `dynamic_tools` group for one agent: `tool_search` and `call_tool` over its deferred tools."""

    def deferred() -> dict[str, ToolSpec]:
        caller = tool_caller(room_needed=False)
        if caller.agent_name != env.agent_name:
            raise ToolError("these are another agent's deferred tools")
        agent = caller.config.agents.get(env.agent_name) if caller.config is not None else None
        names = deferred_names(agent)
        lookup = daemon_parts().tools
        if not names or lookup is None:
            return {}
        return {spec.name: spec for spec in lookup.specs(names, env)}

    def tool_search(query: str = "", max_results: int = 5) -> str:
        """Search your deferred functions by name or keywords and return their definitions, or list them.

        Call a returned function with call_tool(name, arguments).

        Args:
            query: A function name, toolkit name, or keywords for the capability you need; empty lists them.
            max_results: How many definitions to return, at most 20.
        """
        found = deferred()
        words = _words(query)
        if not words:
            listing = [
                {"name": s.name, "toolkit": s.toolkit or "", "description": (s.description or "")[:256]}
                for s in found.values()
            ]
            return tool_payload(DYNAMIC_TOOLS, "ok", functions=listing, usage="Search by name to get a definition.")
        lowered = query.strip().lower()
        ranked = [(_score(spec, words, lowered), order, spec) for order, spec in enumerate(found.values())]
        scored = sorted((item for item in ranked if item[0] > 0), key=lambda item: (-item[0], item[1]))
        matches = [_definition(spec) for _, _, spec in scored[: max(1, min(int(max_results), _MAX_RESULTS))]]
        fields: dict[str, Any] = {"matches": matches, "usage": "Call a match with call_tool(name, arguments)."}
        if not matches:
            fields["message"] = "No deferred function matched; try other keywords, or an empty query to list them."
        return tool_payload(DYNAMIC_TOOLS, "ok", **fields)

    async def call_tool(name: str = "", arguments: Any = None) -> str:
        """Call a deferred function found with tool_search, passing its arguments as a JSON object."""
        spec = deferred().get(name.strip())
        if spec is None:
            subject = f"'{name}' was not called" if name else "Nothing was called"
            message = f"{subject}. Use an exact function name from tool_search and pass arguments as a JSON object."
            return tool_payload(DYNAMIC_TOOLS, "error", message=message)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                return tool_payload(DYNAMIC_TOOLS, "error", message="arguments must be a JSON object")
        if arguments is not None and not isinstance(arguments, dict):
            return tool_payload(DYNAMIC_TOOLS, "error", message="arguments must be a JSON object")
        return await run_tool_call(spec, env.agent_name, arguments or {})

    return (
        ToolSpec(name="tool_search", function=tool_search),
        ToolSpec(
            name="call_tool",
            function=call_tool,
            description="Call a deferred function found with tool_search, passing its arguments as a JSON object.",
            parameters=_CALL_TOOL_PARAMETERS,
        ),
    )
