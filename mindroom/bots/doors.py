"""The doors of the pipeline: where a turn's question came in (`Door`), and what a door hands the one turn
(`Arrival`: the question for one entity, how it is routed, and where its answer goes).

Every door is one adapter over the same turn (`mindroom.bots.turn.TurnRunner.run`: claim -> `message:received`
-> route -> respond). A door builds the message's envelope in the 2026 shape (a `MessageTarget` and a
`TurnOrigin`) and the channel its answer goes to, and never repeats a step of the turn:

- `MATRIX`: a message event a bot's sync delivered (`MessagePipeline`); its event is kept with the claim, so
  a turn a crash cut short is finished at the next start, and its attachment is made part of the turn;
- `API`: a `/v1` chat completion (`mindroom.api.completions`), answered in an HTTP response;
- `HANDOFF`: an agent's question to another agent of its room, within its own turn (`HandoffDesk`).

A schedule or a trigger will be one more door: an envelope, a channel, an `Arrival`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from mindroom.bots.channel import AnswerChannel
from mindroom.bots.ingress import InboundMessage
from mindroom.bots.routing import RouteDecision
from mindroom.bots.runtime import Entity, LiveState
from mindroom.matrix import MatrixEvent

__all__ = ["DIRECT", "Arrival", "Chains", "Door", "Route", "TurnEntry"]


class Door(StrEnum):
    """Where a turn's question came in."""

    MATRIX = "matrix"
    API = "api"
    HANDOFF = "handoff"


@dataclass(frozen=True, slots=True)
class Route:
    """What the entity may do with the message once `message:received` passed it: act (answer it, take part in
    routing it, run its command) or only observe it; `direct` when the door named the entity that answers."""

    acts: bool
    command: bool = False
    decision: RouteDecision | None = None
    direct: bool = False


DIRECT = Route(acts=True, direct=True)
"""The route of a door that names who answers (an API request's model, a hand-off's helper)."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """One question at a door, for one entity: the live state its whole turn runs on, the accepted message, how
    it is routed, and where its answer goes (None: the message's Matrix thread).

    `event` is the Matrix door's event: kept with the claim until the turn completes, and its attachment
    downloaded (and a voice message heard) before `message:received`. `replay` is the next start's run of a
    turn a crash cut short: claimed already, it is only completed.
    """

    door: Door
    entity: Entity
    live: LiveState
    inbound: InboundMessage
    route: Route = DIRECT
    channel: AnswerChannel | None = None
    event: MatrixEvent | None = None
    replay: bool = False

    @property
    def kept(self) -> dict[str, Any] | None:
        """What the journal keeps with the claim: a Matrix event the entity acts on, to finish after a crash.

        An API client that is gone cannot be answered after a restart, and a hand-off is asked again by the
        turn that asked it: neither keeps anything.
        """
        if self.event is None or not (self.route.acts or self.replay):
            return None
        # Shallow: the journal copies the content it redacts and only reads the rest (`kept_event`).
        return {field.name: getattr(self.event, field.name) for field in dataclasses.fields(self.event)}


class TurnEntry(Protocol):
    """The one turn, as a door calls it."""

    def run(self, arrival: Arrival) -> Awaitable[None]:
        """Run `arrival` through claim, `message:received`, routing and the answer."""


class Chains(Protocol):
    """Where a running turn's chain of bot answers is known to the hand-offs it makes (`HandoffDesk`)."""

    def turn(self, correlation_id: str, hops: int) -> AbstractContextManager[None]:
        """While the turn runs: its answer ends a chain of `hops` bot answers."""
