"""Coordination between the entities that each receive the same message.

Every bot syncs on its own and runs its own copy of the pipeline. Two decisions span entities:
the router's choice of agent (agents wait for it), and the order in which several mentioned
agents answer (each waits until the one before it finished).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

__all__ = ["TurnCoordinator"]

_KEEP_S = 600.0


@dataclass(slots=True)
class _EventState:
    created: float
    assignment: asyncio.Future[str | None]
    finished: set[str] = field(default_factory=set)
    finished_changed: asyncio.Event = field(default_factory=asyncio.Event)


class TurnCoordinator:
    """Per-event rendezvous: the router's assignment and the progress of ordered answers."""

    def __init__(self) -> None:
        self._events: dict[str, _EventState] = {}

    def _state(self, event_id: str) -> _EventState:
        state = self._events.get(event_id)
        if state is None:
            self._prune()
            state = _EventState(time.monotonic(), asyncio.get_running_loop().create_future())
            self._events[event_id] = state
        return state

    def _prune(self) -> None:
        cutoff = time.monotonic() - _KEEP_S
        for event_id in [e for e, s in self._events.items() if s.created < cutoff]:
            state = self._events.pop(event_id)
            if not state.assignment.done():
                state.assignment.set_result(None)

    def assign(self, event_id: str, agent_name: str | None) -> None:
        """The router's decision for `event_id` (None: nobody answers)."""
        future = self._state(event_id).assignment
        if not future.done():
            future.set_result(agent_name)

    async def assignment(self, event_id: str, timeout_s: float) -> str | None:
        """Wait for the router's decision; None if it does not come in time."""
        future = self._state(event_id).assignment
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return None

    def finish(self, event_id: str, agent_name: str) -> None:
        """`agent_name` is done with `event_id` (answered, skipped or failed)."""
        state = self._state(event_id)
        state.finished.add(agent_name)
        state.finished_changed.set()

    async def wait_for(self, event_id: str, agents: tuple[str, ...], timeout_s: float) -> None:
        """Wait until every agent in `agents` finished `event_id` (or the timeout passes)."""
        state = self._state(event_id)
        deadline = time.monotonic() + timeout_s
        while not set(agents) <= state.finished:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            state.finished_changed.clear()
            try:
                await asyncio.wait_for(state.finished_changed.wait(), remaining)
            except TimeoutError:
                return
