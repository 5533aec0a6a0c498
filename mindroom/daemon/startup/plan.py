"""The order of the start-up phases, and one run's progress through them: the phases entered and how each stops.

`STARTUP` is the one statement of the order (docs/operations.md lists it; a test keeps the two the same).
`Orchestrator.start` enters each phase by name, and `RunProgress.enter` refuses one out of turn. A phase
that starts something says how it stops (`PhaseStops.add`): stopping runs the phases backwards, each
phase's parts in the order it gave them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["STARTUP", "PhaseStops", "RunProgress", "StopPart", "Stopping"]

STARTUP: tuple[str, ...] = (
    "live state",
    "state",
    "run",
    "mcp servers",
    "accounts",
    "rooms",
    "sync",
    "recovery",
    "schedules",
    "reload",
    "ready",
)
"""The start-up phases, in the order they run."""


@dataclass(frozen=True, slots=True)
class Stopping:
    """Why the daemon stops, and how long what is in flight gets to finish: one grace for the whole stop.

    Each part asks for `grace_s` when its turn comes and gets what is left of the grace given when the stop
    began, so parts that each wait (answers, queued background hooks, memory writes, exports) together take
    at most that grace, not one grace each."""

    reason: str
    given_s: float
    started: float = field(default_factory=time.monotonic)

    @property
    def grace_s(self) -> float:
        """What is left of the stop's grace now (0 once it ran out)."""
        return max(0.0, self.given_s - (time.monotonic() - self.started))


@dataclass(frozen=True, slots=True)
class StopPart:
    """One part to stop, named for the log, and how."""

    name: str
    stop: Callable[[Stopping], Awaitable[object]]


class PhaseStops:
    """How one phase stops what it started: its parts, in the order they stop."""

    __slots__ = ("parts", "phase")

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.parts: list[StopPart] = []

    def add(self, name: str, stop: Callable[[Stopping], Awaitable[object]]) -> None:
        """Stop `name` with `stop` (given as soon as the part exists, so a start that fails later stops it)."""
        self.parts.append(StopPart(name, stop))


class RunProgress:
    """One run's way through `STARTUP`: the phases entered so far, and how each of them stops."""

    __slots__ = ("_order", "_stops")

    def __init__(self, order: tuple[str, ...] = STARTUP) -> None:
        self._order = order
        self._stops: list[PhaseStops] = []

    @property
    def phases(self) -> tuple[str, ...]:
        """The phases entered, in order (the last one may not have finished)."""
        return tuple(stops.phase for stops in self._stops)

    def enter(self, phase: str) -> PhaseStops:
        """Begin `phase`, which must be the next of the order; returns where it says how it stops."""
        done = len(self._stops)
        expected = self._order[done] if done < len(self._order) else None
        if phase != expected:
            msg = f"start-up phase {phase!r} out of order: the next is {expected!r}"
            raise RuntimeError(msg)
        stops = PhaseStops(phase)
        self._stops.append(stops)
        return stops

    def stop_order(self) -> list[StopPart]:
        """Every part to stop: the phases backwards, each phase's parts in its own order."""
        return [part for stops in reversed(self._stops) for part in stops.parts]
