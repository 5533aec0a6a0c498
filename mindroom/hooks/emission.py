"""What every emission shares: one prologue (`open_emission`) that finds the hooks that fire, enters a nesting
level (left by `Emission.close`) and reads what each hook call needs of the registry, and the binding of a
hook to its context."""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from mindroom.errors import MindroomError
from mindroom.hooks.hook_context import HookContextBase, RegistryGeneration
from mindroom.hooks.registry import HookRegistry, RegisteredHook
from mindroom.logging_config import get_logger

__all__ = [
    "MAX_EMIT_DEPTH",
    "Emission",
    "InvalidHookResultError",
    "note_monitored",
    "open_emission",
]

# Emission logs stay under the engine's name, which operators already filter on.
logger = get_logger("mindroom.hooks.execution")

MAX_EMIT_DEPTH = 3

_emit_depth: ContextVar[int] = ContextVar("mindroom_hook_emit_depth", default=0)


class InvalidHookResultError(MindroomError):
    """A hook returned something its mode cannot use."""


class Emission:
    """One emission under way: the hooks that fire, in order, with the registry's blocking threshold and
    generation; it holds one nesting level until `close` (called in the emission's `finally`)."""

    __slots__ = ("_token", "generation", "hooks", "threshold_s")

    def __init__(self, hooks: tuple[RegisteredHook, ...], registry: HookRegistry, token: Token[int]) -> None:
        self.hooks = hooks
        self.threshold_s = registry.blocking_threshold_ms / 1000.0
        self.generation: RegistryGeneration = registry.generation
        self._token = token

    def close(self) -> None:
        """Leave the nesting level the emission entered (a `with` block would cost a call more per emit)."""
        _emit_depth.reset(self._token)

    def bind(self, ctx: HookContextBase, hook: RegisteredHook) -> None:
        """Give `ctx` the running hook's identity, settings, logger and this emission's registry generation."""
        ctx.plugin_name = hook.plugin_name
        ctx.hook_name = hook.hook_name
        ctx.settings = hook.settings
        ctx.logger = hook.logger
        ctx.registry_generation = self.generation


def open_emission(registry: HookRegistry, event_name: str, ctx: HookContextBase) -> Emission | None:
    """The prologue of every emit: the hooks of `event_name` that fire for `ctx`, one nesting level deeper;
    None when none run (no hook matches, or the emission would nest too deep)."""
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return None
    depth = _emit_depth.get()
    if depth >= MAX_EMIT_DEPTH:
        logger.warning("nested hook emission dropped", hook_event=event_name, depth=depth + 1, limit=MAX_EMIT_DEPTH)
        return None
    return Emission(hooks, registry, _emit_depth.set(depth + 1))


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
