"""The context tool code runs in, and `emit_custom_event` for tools to raise plugin-defined events."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mindroom.constants import RuntimePaths
from mindroom.hooks.context import CustomEventContext, MessageSender, RoomStatePutter, RoomStateQuerier
from mindroom.hooks.execution import emit
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.types import is_custom_event, validate_event_name
from mindroom.logging_config import get_logger

__all__ = [
    "ToolCallRecord",
    "ToolRuntimeContext",
    "bind_runtime_context",
    "emit_custom_event",
    "get_runtime_context",
    "provided_registry",
    "set_registry_provider",
]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One finished tool call of a turn: what the model asked, what it got back, and how it went."""

    tool_name: str
    arguments: Mapping[str, Any]
    result: str
    error: str | None = None
    blocked: bool = False
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolRuntimeContext:
    """Who a tool runs for and which hook registry its events go to (bound per turn).

    `calls` is the turn's log of finished tool calls, appended to by the tool wrapper.
    """

    registry: HookRegistry
    agent_name: str | None = None
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    correlation_id: str | None = None
    config: Any = None
    runtime_paths: RuntimePaths | None = None
    message_sender: MessageSender | None = None
    room_state_querier: RoomStateQuerier | None = None
    room_state_putter: RoomStatePutter | None = None
    calls: list[ToolCallRecord] = field(default_factory=list, compare=False, repr=False)


_current: ContextVar[ToolRuntimeContext | None] = ContextVar("mindroom_tool_runtime_context", default=None)
_registry_provider: Callable[[], HookRegistry | None] | None = None


def set_registry_provider(provider: Callable[[], HookRegistry | None] | None) -> None:
    """Tell `emit_custom_event` where the live registry is when no turn context is bound (the daemon sets this)."""
    global _registry_provider
    _registry_provider = provider


@contextmanager
def bind_runtime_context(context: ToolRuntimeContext) -> Iterator[ToolRuntimeContext]:
    """Bind `context` for tool code running inside the `with` block (and tasks started from it)."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def get_runtime_context() -> ToolRuntimeContext | None:
    """The runtime context bound for the running tool, if any."""
    return _current.get()


def provided_registry() -> HookRegistry | None:
    """The daemon's live registry (from `set_registry_provider`), for tool code running outside a bound turn."""
    return _registry_provider() if _registry_provider is not None else None


async def emit_custom_event(plugin_name: str, event_name: str, payload: Mapping[str, Any]) -> None:
    """Emit a plugin-defined event from tool code; its hooks run in observer mode."""
    validate_event_name(event_name)
    if not is_custom_event(event_name):
        msg = f"{event_name!r} is a built-in event; tools may only emit custom events"
        raise ValueError(msg)
    bound = _current.get()
    registry = bound.registry if bound is not None else provided_registry()
    if registry is None:
        logger.warning("custom event dropped: no hook registry is bound", plugin=plugin_name, hook_event=event_name)
        return
    ctx = CustomEventContext(event_name=event_name, payload=dict(payload), source_plugin=plugin_name)
    if bound is not None:
        ctx.agent_name = bound.agent_name
        ctx.room_id = bound.room_id
        ctx.config = bound.config
        ctx.runtime_paths = bound.runtime_paths
        ctx.message_sender = bound.message_sender
        ctx.room_state_querier = bound.room_state_querier
        ctx.room_state_putter = bound.room_state_putter
        if bound.correlation_id:
            ctx.correlation_id = bound.correlation_id
    await emit(registry, event_name, ctx)
