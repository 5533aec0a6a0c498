"""The `@hook` decorator: annotation only, it stores metadata on the function and changes nothing else."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from mindroom.hooks.types import REQUIRED_HOOK_EVENTS, HookExecutionMode, execution_mode, validate_event_name

__all__ = ["DEFAULT_PRIORITY", "HOOK_METADATA_ATTR", "HookMetadata", "get_hook_metadata", "hook"]

HOOK_METADATA_ATTR = "__mindroom_hook__"
DEFAULT_PRIORITY = 100

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class HookMetadata:
    """What `@hook(...)` recorded about a callback."""

    event_name: str
    hook_name: str
    priority: int = DEFAULT_PRIORITY
    timeout_ms: int | None = None
    agents: tuple[str, ...] | None = None
    """The agents the hook fires for (None: every one), in the order written, each name once."""
    rooms: tuple[str, ...] | None = None
    """The rooms the hook fires in (None: every one), in the order written, each id once."""
    fail_closed: bool = False
    required: bool = False
    background: bool = False
    """An observer whose calls queue and run apart from the pipeline, which never waits for them."""


def _name_set(values: Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    """The filter as a tuple (as MindRoom keeps it): first-seen order, repeats and blank names dropped; a filter
    left empty is no filter (it fires everywhere)."""
    if values is None:
        return None
    given = [values] if isinstance(values, str) else list(values)
    if not all(isinstance(value, str) for value in given):
        msg = f"{what} must be strings"
        raise TypeError(msg)
    result = tuple(dict.fromkeys(value for value in given if value.strip()))
    return result or None


def hook(
    event: str,
    *,
    name: str | None = None,
    priority: int = DEFAULT_PRIORITY,
    timeout_ms: int | None = None,
    agents: Iterable[str] | None = None,
    rooms: Iterable[str] | None = None,
    fail_closed: bool = False,
    required: bool = False,
    background: bool = False,
) -> Callable[[_F], _F]:
    """Mark an async function as a handler of `event`; returns the function unchanged.

    `required=True` (only on `agent:started`) makes a failure of the hook fail the bot's start.
    `background=True` (observer events only) queues the hook's calls: the pipeline goes on without waiting.
    """
    validate_event_name(event)
    if isinstance(priority, bool) or not isinstance(priority, int):
        msg = f"priority must be an int, got {priority!r}"
        raise TypeError(msg)
    if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0):
        msg = f"timeout_ms must be a positive int or None, got {timeout_ms!r}"
        raise ValueError(msg)
    if fail_closed and execution_mode(event) is not HookExecutionMode.GATE:
        msg = f"fail_closed applies to gate events only, not {event!r}"
        raise ValueError(msg)
    if required and event not in REQUIRED_HOOK_EVENTS:
        msg = f"required=True is allowed only on {', '.join(sorted(REQUIRED_HOOK_EVENTS))}, not on {event!r}"
        raise ValueError(msg)
    if background and (execution_mode(event) is not HookExecutionMode.OBSERVER or required):
        msg = f"background=True applies to observer events only (not required hooks), not {event!r}"
        raise ValueError(msg)
    agent_names = _name_set(agents, "agents")
    room_ids = _name_set(rooms, "rooms")

    def decorate(func: _F) -> _F:
        """Record the metadata on `func` and hand it back unchanged."""
        if not inspect.iscoroutinefunction(func):
            msg = f"hook {getattr(func, '__qualname__', func)!r} must be an async function (async def)"
            raise TypeError(msg)
        metadata = HookMetadata(
            event_name=event,
            hook_name=name or func.__name__,
            priority=priority,
            timeout_ms=timeout_ms,
            agents=agent_names,
            rooms=room_ids,
            fail_closed=fail_closed,
            required=bool(required),
            background=bool(background),
        )
        setattr(func, HOOK_METADATA_ATTR, metadata)
        return func

    return decorate


def get_hook_metadata(func: object) -> HookMetadata | None:
    """The metadata `@hook` stored on `func`, or None for undecorated callables."""
    try:
        metadata = getattr(func, HOOK_METADATA_ATTR, None)
    except Exception:  # a plugin's object whose attribute lookup raises is no hook
        return None
    return metadata if isinstance(metadata, HookMetadata) else None
