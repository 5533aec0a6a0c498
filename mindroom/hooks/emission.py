"""What every emission shares: finding the hooks that fire, the nesting guard, and binding a hook to its context."""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from mindroom.errors import MindroomError
from mindroom.hooks.hook_context import HookContextBase, RegistryGeneration
from mindroom.hooks.registry import HookRegistry, RegisteredHook
from mindroom.logging_config import get_logger

__all__ = [
    "MAX_EMIT_DEPTH",
    "InvalidHookResultError",
    "bind_hook",
    "emission_scope",
    "end_emission",
    "note_monitored",
]

# Emission logs stay under the engine's name, which operators already filter on.
logger = get_logger("mindroom.hooks.execution")

MAX_EMIT_DEPTH = 3

_emit_depth: ContextVar[int] = ContextVar("mindroom_hook_emit_depth", default=0)


class InvalidHookResultError(MindroomError):
    """A hook returned something its mode cannot use."""


def bind_hook(ctx: HookContextBase, hook: RegisteredHook, generation: RegistryGeneration) -> None:
    """Give `ctx` the running hook's identity, settings, logger and registry generation."""
    ctx.plugin_name = hook.plugin_name
    ctx.hook_name = hook.hook_name
    ctx.settings = hook.settings
    ctx.logger = hook.logger
    ctx.registry_generation = generation


def note_monitored(hook: RegisteredHook, effect: str, **details: Any) -> None:
    """Count and log an effect a monitor-mode hook would have had."""
    hook.stats.monitored_effects += 1
    logger.info(
        "monitor mode discarded hook effect",
        plugin=hook.plugin_name,
        hook=hook.hook_name,
        hook_event=hook.event_name,
        effect=effect,
        **details,
    )


def emission_scope(
    registry: HookRegistry, event_name: str, ctx: HookContextBase
) -> tuple[tuple[RegisteredHook, ...], Token[int]] | None:
    """The prologue of every emit: the hooks that fire here, and the nesting token; None when none run."""
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return None
    depth = _emit_depth.get()
    if depth >= MAX_EMIT_DEPTH:
        logger.warning("nested hook emission dropped", hook_event=event_name, depth=depth + 1, limit=MAX_EMIT_DEPTH)
        return None
    return hooks, _emit_depth.set(depth + 1)


def end_emission(token: Token[int]) -> None:
    """The epilogue of every emit: leave the nesting level `emission_scope` entered."""
    _emit_depth.reset(token)
