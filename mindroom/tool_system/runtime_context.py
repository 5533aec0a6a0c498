"""The context tool code runs in, and `emit_custom_event` for tools to raise plugin-defined events.

Also the names the 2026 plugin API imports from here: `get_tool_runtime_context`, the frozen hook
bindings a tool can use (`resolve_tool_runtime_hook_bindings`), and the identity a tool call runs as.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.hooks.capabilities import HookMatrixAdmin, RelaySender
from mindroom.hooks.context import CustomEventContext, MessageSender, RoomStatePutter, RoomStateQuerier
from mindroom.hooks.execution import emit
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.state import plugin_state_dir
from mindroom.hooks.target import MessageTarget, session_id_for
from mindroom.hooks.tool_contexts import ApprovalRequester
from mindroom.hooks.types import is_custom_event, validate_event_name
from mindroom.logging_config import get_logger
from mindroom.private_files import private_dir
from mindroom.tool_system.spec import OutboundFile

__all__ = [
    "MINDROOM_ONLY_KEYWORDS",
    "ResolvedWorkerTarget",
    "ToolCallRecord",
    "ToolExecutionIdentity",
    "ToolRuntimeContext",
    "ToolRuntimeHookBindings",
    "bind_runtime_context",
    "build_execution_identity_from_runtime_context",
    "emit_custom_event",
    "get_plugin_state_root",
    "get_runtime_context",
    "get_tool_runtime_context",
    "provided_registry",
    "resolve_tool_runtime_hook_bindings",
    "set_registry_provider",
    "tool_runtime_context",
]

logger = get_logger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One finished tool call of a turn: what the model asked, what it got back, and how it went."""

    tool_name: str
    arguments: Mapping[str, Any]
    result: str
    error: str | None = None
    blocked: bool = False
    duration_ms: float = 0.0


# MindRoom 2026.10's constructor keywords that name nothing this daemon has (a raw Matrix client and room, its
# caches, workers, teams, personas, budgets): accepted so that code building a context for MindRoom builds one here
# too, and kept as given in `ToolRuntimeContext.unused_fields`. `event_cache` and `conversation_cache` are names
# earlier 2026 releases took, which published plugins' tests still pass.
MINDROOM_ONLY_KEYWORDS = frozenset(
    {
        "agent_reply_memberships",
        "attachment_ids",
        "cli_approval_handler",
        "client",
        "config_provider",
        "conversation_cache",
        "conversation_reader",
        "event_cache",
        "hook_registry_state",
        "membership",
        "membership_turn_id",
        "orchestrator",
        "persona",
        "relations",
        "room",
        "runtime_attachment_ids",
        "runtime_media_attachments",
        "source_kind",
        "storage_path",
        "tool_function_filter",
        "transport_agent_name",
    }
)


@dataclass(frozen=True, slots=True, init=False)
class ToolRuntimeContext:
    """Who a tool runs for and which hook registry its events go to (bound per turn).

    `calls` is the turn's log of finished tool calls, appended to by the tool wrapper.

    The constructor takes this daemon's keywords (`registry` first, positionally too) and MindRoom 2026.10's:
    `hook_registry` and `hook_message_sender` name `registry` and `message_sender`; a `target` alone gives
    `room_id`, `thread_id` (its source thread) and `session_id`; the registry defaults to an empty one. The
    keywords in `MINDROOM_ONLY_KEYWORDS` are kept in `unused_fields` and change nothing; any other raises
    `TypeError`.
    """

    registry: HookRegistry
    agent_name: str | None
    room_id: str | None
    thread_id: str | None
    requester_id: str | None
    session_id: str | None
    correlation_id: str | None
    config: Any
    runtime_paths: RuntimePaths | None
    message_sender: MessageSender | None
    room_state_querier: RoomStateQuerier | None
    room_state_putter: RoomStatePutter | None
    calls: list[ToolCallRecord] = field(compare=False, repr=False)
    # Added with the 2026 plugin API; the pipeline passes them when it has them.
    matrix_admin: HookMatrixAdmin | None = field(compare=False, repr=False)
    message_received_depth: int
    target: MessageTarget | None
    active_model_name: str | None
    approval_requester: ApprovalRequester | None = field(compare=False, repr=False)
    """Asks a person to allow a call (`ToolBeforeCallContext.request_approval`); None: nobody can be asked."""
    outbox: list[OutboundFile] = field(compare=False, repr=False)
    """Files and images the turn's tools made for the person, sent with the answer."""
    unused_fields: Mapping[str, Any] = field(compare=False, repr=False)
    """The `MINDROOM_ONLY_KEYWORDS` the context was built with, as given."""

    def __init__(
        self,
        registry: HookRegistry | None = None,
        agent_name: str | None = None,
        room_id: str | None = None,
        thread_id: str | None = None,
        requester_id: str | None = None,
        session_id: str | None = None,
        correlation_id: str | None = None,
        config: Any = None,
        runtime_paths: RuntimePaths | None = None,
        message_sender: MessageSender | None = None,
        room_state_querier: RoomStateQuerier | None = None,
        room_state_putter: RoomStatePutter | None = None,
        calls: list[ToolCallRecord] | None = None,
        matrix_admin: HookMatrixAdmin | None = None,
        message_received_depth: int = 0,
        target: MessageTarget | None = None,
        active_model_name: str | None = None,
        approval_requester: ApprovalRequester | None = None,
        outbox: list[OutboundFile] | None = None,
        *,
        hook_registry: HookRegistry | None = None,
        hook_message_sender: MessageSender | None = None,
        unused_fields: Mapping[str, Any] | None = None,
        **mindroom_only: Any,
    ) -> None:
        unknown = sorted(set(mindroom_only) - MINDROOM_ONLY_KEYWORDS)
        if unknown:
            msg = f"ToolRuntimeContext got unexpected keyword arguments: {', '.join(unknown)}"
            raise TypeError(msg)
        if target is not None:
            room_id = room_id if room_id is not None else target.room_id
            thread_id = thread_id if thread_id is not None else target.source_thread_id
            session_id = session_id if session_id is not None else target.session_id
        registry = _first(registry, hook_registry, "registry", "hook_registry")
        values: dict[str, Any] = {
            "registry": HookRegistry.empty() if registry is None else registry,
            "agent_name": agent_name,
            "room_id": room_id,
            "thread_id": thread_id,
            "requester_id": requester_id,
            "session_id": session_id,
            "correlation_id": correlation_id,
            "config": config,
            "runtime_paths": runtime_paths,
            "message_sender": _first(message_sender, hook_message_sender, "message_sender", "hook_message_sender"),
            "room_state_querier": room_state_querier,
            "room_state_putter": room_state_putter,
            "calls": [] if calls is None else calls,
            "matrix_admin": matrix_admin,
            "message_received_depth": message_received_depth,
            "target": target,
            "active_model_name": active_model_name,
            "approval_requester": approval_requester,
            "outbox": [] if outbox is None else outbox,
            "unused_fields": MappingProxyType({**(unused_fields or {}), **mindroom_only}),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def current_config(self) -> Any:
        """MindRoom's name for the config a tool should read: `config` (the turn's snapshot)."""
        return self.config

    @property
    def recipient(self) -> str | None:
        """The entity whose account answers this turn: the agent, or the team."""
        return self.agent_name

    @property
    def hook_registry(self) -> HookRegistry:
        """The 2026 API's name for `registry`."""
        return self.registry

    @property
    def resolved_thread_id(self) -> str | None:
        """The thread the answer goes to: the target's, else `thread_id` (this daemon binds the answer's thread)."""
        return self.target.resolved_thread_id if self.target is not None else self.thread_id

    @property
    def reply_to_event_id(self) -> str | None:
        """The event the answer replies to, when the target is known."""
        return self.target.reply_to_event_id if self.target is not None else None

    def resolve_worker_target(self) -> ResolvedWorkerTarget:
        """Where this agent's tools run: always this process here; `ValueError` for router dispatches."""
        if not self.agent_name or self.agent_name == ROUTER_AGENT_NAME:
            msg = "tools of a router dispatch (or of no agent) have no worker target"
            raise ValueError(msg)
        return ResolvedWorkerTarget(routing_agent_name=self.agent_name)


@dataclass(frozen=True, slots=True)
class ResolvedWorkerTarget:
    """Where a tool runs. This daemon has no workers: every target is its own process (`worker_scope` None)."""

    routing_agent_name: str | None = None
    worker_scope: str | None = None
    execution_identity: ToolExecutionIdentity | None = None


@dataclass(frozen=True, slots=True)
class ToolRuntimeHookBindings:
    """The hook capabilities a tool can use: send messages, administer rooms, read and write room state."""

    message_sender: MessageSender | None
    matrix_admin: HookMatrixAdmin | None
    room_state_querier: RoomStateQuerier | None
    room_state_putter: RoomStatePutter | None
    message_received_depth: int


@dataclass(frozen=True, slots=True)
class ToolExecutionIdentity:
    """Who and where a tool call runs for: the agent, the requester, and the conversation."""

    channel: str
    agent_name: str | None
    requester_id: str | None
    room_id: str | None
    thread_id: str | None
    resolved_thread_id: str | None
    session_id: str | None


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


@contextmanager
def tool_runtime_context(context: ToolRuntimeContext | None) -> Iterator[None]:
    """MindRoom's name for `bind_runtime_context`; `None` binds no context for the block (tools then see none)."""
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)


def get_runtime_context() -> ToolRuntimeContext | None:
    """The runtime context bound for the running tool, if any."""
    return _current.get()


def get_tool_runtime_context() -> ToolRuntimeContext | None:
    """The 2026 API's name for `get_runtime_context`."""
    return _current.get()


def get_plugin_state_root(plugin_name: str, *, runtime_paths: RuntimePaths | None = None) -> Path:
    """`<data>/plugins/<plugin_name>/` (created), as `ctx.state_root` is: the older plugins' helper for tool code.

    Without `runtime_paths`, the bound tool runtime context's are used; `RuntimeError` when there are none.
    """
    paths = runtime_paths
    if paths is None:
        bound = _current.get()
        paths = bound.runtime_paths if bound is not None else None
    if paths is None:
        msg = "no runtime paths: pass runtime_paths= or call this from a running tool"
        raise RuntimeError(msg)
    path = plugin_state_dir(paths.storage_root, plugin_name)
    private_dir(path)
    return path


def resolve_tool_runtime_hook_bindings(context: ToolRuntimeContext) -> ToolRuntimeHookBindings:
    """The hook capabilities bound to a tool call (its sender takes both API generations' call shapes)."""
    sender = context.message_sender
    if sender is not None and type(sender) is not RelaySender:
        sender = RelaySender(sender)
    return ToolRuntimeHookBindings(
        message_sender=sender,
        matrix_admin=context.matrix_admin,
        room_state_querier=context.room_state_querier,
        room_state_putter=context.room_state_putter,
        message_received_depth=context.message_received_depth,
    )


def build_execution_identity_from_runtime_context(context: ToolRuntimeContext) -> ToolExecutionIdentity:
    """The identity a tool call runs as, from its runtime context."""
    room_id = context.room_id
    resolved = context.resolved_thread_id
    session_id = context.session_id
    if session_id is None and room_id:
        session_id = session_id_for(room_id, resolved)
    return ToolExecutionIdentity(
        channel="matrix",
        agent_name=context.agent_name,
        requester_id=context.requester_id,
        room_id=room_id,
        thread_id=context.thread_id,
        resolved_thread_id=resolved,
        session_id=session_id,
    )


def _first(ours: _T | None, theirs: _T | None, name: str, their_name: str) -> _T | None:
    """One of two names for the same keyword; both given and different is an error."""
    if ours is not None and theirs is not None and ours is not theirs:
        msg = f"ToolRuntimeContext got both {name}= and {their_name}= (two names of one field)"
        raise TypeError(msg)
    return ours if ours is not None else theirs


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
        ctx.matrix_admin = bound.matrix_admin
        ctx.message_received_depth = bound.message_received_depth
        if bound.correlation_id:
            ctx.correlation_id = bound.correlation_id
    await emit(registry, event_name, ctx)
