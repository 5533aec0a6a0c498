"""`tool:environment` for one tool call: the hooks' environment changes, bound while the call runs.

`collect_tool_environment` runs the hooks for a call the gate let through; `bind_tool_environment` makes
the merged result what `current_tool_environment()` returns while the call runs, for the shell tool to
apply to the commands it starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mindroom.hooks.collector import emit_tool_environment
from mindroom.hooks.context import ToolEnvironment, ToolEnvironmentContext
from mindroom.hooks.types import EVENT_TOOL_ENVIRONMENT
from mindroom.tool_system.runtime_context import get_runtime_context, provided_registry

__all__ = ["bind_tool_environment", "collect_tool_environment", "current_tool_environment"]

_environment: ContextVar[ToolEnvironment | None] = ContextVar("mindroom_tool_environment", default=None)


async def collect_tool_environment(
    function_name: str, registered_toolkit: str | None, arguments: Mapping[str, Any], agent_name: str
) -> ToolEnvironment:
    """Run `tool:environment` for one call that is about to run (after the gate let it through)."""
    bound = get_runtime_context()
    registry = bound.registry if bound is not None else provided_registry()
    room_id = bound.room_id if bound is not None else None
    if registry is None or not registry.matching(EVENT_TOOL_ENVIRONMENT, agent_name, room_id):
        return ToolEnvironment()  # no hook listens: the context is not even built
    ctx = ToolEnvironmentContext(
        function_name=function_name,
        registered_toolkit=registered_toolkit,
        arguments=dict(arguments),
        agent_name=agent_name,
        room_id=room_id,
        requester_id=bound.requester_id if bound is not None else None,
        config=bound.config if bound is not None else None,
        runtime_paths=bound.runtime_paths if bound is not None else None,
    )
    if bound is not None and bound.correlation_id:
        ctx.correlation_id = bound.correlation_id
    return await emit_tool_environment(registry, ctx)


@contextmanager
def bind_tool_environment(environment: ToolEnvironment) -> Iterator[ToolEnvironment]:
    """Make `environment` the current call's (for code running inside the `with` block)."""
    token = _environment.set(environment)
    try:
        yield environment
    finally:
        _environment.reset(token)


def current_tool_environment() -> ToolEnvironment | None:
    """The merged `tool:environment` changes of the running tool call, if any were bound."""
    return _environment.get()
