"""`TurnAgent`: an agno Agent whose system prompt can carry a block for one run only (`system:enrich`).

Agents are cached and shared by the turns of one agent that run at once, so per-run text cannot be set
on the Agent. It sits in a context variable that each run sets in its own task; the Agent's
`additional_context` reads it when agno builds that run's system message. Nothing of it is stored:
agno keeps user and assistant messages as history, not system messages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from agno.agent import Agent

__all__ = ["TurnAgent", "run_system_block", "run_system_context", "set_run_system_context"]

_RUN_CONTEXT: ContextVar[str] = ContextVar("mindroom_run_system_context", default="")


class TurnAgent(Agent):
    """An Agent whose `additional_context` is its own plus the running turn's system block."""

    @property  # type: ignore[override]
    def additional_context(self) -> str | None:
        """The Agent's own additional context, then this run's system block."""
        parts = [self.__dict__.get("_own_additional_context"), run_system_block()]
        joined = "\n".join(part for part in parts if part)
        return joined or None

    @additional_context.setter
    def additional_context(self, value: str | None) -> None:
        self.__dict__["_own_additional_context"] = value


@contextlib.contextmanager
def run_system_context(text: str) -> Iterator[None]:
    """Within the block (and tasks started in it), this task's runs add `text` to their system message."""
    token = _RUN_CONTEXT.set(text)
    try:
        yield
    finally:
        _RUN_CONTEXT.reset(token)


def set_run_system_context(text: str) -> None:
    """Set this task's system block for its runs from now on (for a task that lives only for one run)."""
    _RUN_CONTEXT.set(text)


def run_system_block() -> str:
    """This task's system block for its runs ("" when none is set)."""
    return _RUN_CONTEXT.get()
