"""The agno agent or team running a tool call, for the toolkit functions that take it (`agent`, `team`).

agno passes them to a function asking for them; our tools run behind the tool hooks instead, so the agno
`Function` that runs a tool sets `CALLER` for the call, and a function made by `given_caller` takes them from
there, outside the model's arguments and the hooks'.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

__all__ = ["CALLER", "CALLER_PARAMETERS", "given_caller", "wants_caller"]

CALLER_PARAMETERS = frozenset({"agent", "team"})
CALLER: ContextVar[tuple[Any, Any]] = ContextVar("mindroom_agno_caller", default=(None, None))
"""The (agent, team) running the current tool call, while it runs."""
_WANTS_CALLER = "_mindroom_wants_agno_caller"


def wants_caller(function: Callable[..., Any]) -> bool:
    """Whether `function` was made by `given_caller` (its agno `Function` must set `CALLER`)."""
    return bool(getattr(function, _WANTS_CALLER, False))


def given_caller(function: Callable[..., Any], wanted: frozenset[str]) -> Callable[..., Any]:
    """`function` called with the model's arguments and the `agent` and/or `team` running the call."""

    def caller() -> dict[str, Any]:
        agent, team = CALLER.get()
        return {name: value for name, value in (("agent", agent), ("team", team)) if name in wanted}

    async def call_async(**arguments: Any) -> Any:
        return await function(**arguments, **caller())

    def call(**arguments: Any) -> Any:
        return function(**arguments, **caller())

    chosen = call_async if inspect.iscoroutinefunction(function) else call
    setattr(chosen, _WANTS_CALLER, True)
    return chosen
