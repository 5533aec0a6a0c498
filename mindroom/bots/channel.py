"""`AnswerChannel`: where one answer goes and how it is shown while it is made; `Turn`: what is answered.

The answer's stages (`mindroom.bots.respond`: enrich -> generate -> before_response -> deliver ->
after_response) run the same for every channel; only the channel differs. `MatrixAnswer`
(`mindroom.bots.matrix_answer`) answers in the message's Matrix thread: a typing notice, a streamed
message edited as text arrives, the final edit. The OpenAI-compatible API's channel
(`mindroom.api.http_answer`) answers in an HTTP response: one JSON body, or Server-Sent Events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mindroom.bots.edits import EditWatch
from mindroom.bots.lifecycle import OpenAnswer
from mindroom.bots.runtime import LiveState
from mindroom.bots.streaming import Streamed
from mindroom.hooks.context import HookBindings
from mindroom.state.answers import AnswerRecord

__all__ = ["AnswerChannel", "GenerationSetup", "Turn"]


@dataclass(frozen=True, slots=True)
class GenerationSetup:
    """What a channel runs the model with: the turn's live state and records, and where sessions are kept.

    `streaming` is the agent's own setting (a channel may decide otherwise: an HTTP client asks for itself);
    `after_reply` runs once the answer is out (an early answer's storing is pushed there);
    `existing_event_id` is the earlier answer an edited question's answer replaces.
    """

    live: LiveState
    answer: OpenAnswer
    after_reply: contextlib.AsyncExitStack
    streaming: bool
    storage_root: Path
    env: Mapping[str, str]
    database_url: str | None = None
    existing_event_id: str | None = None


class AnswerChannel(Protocol):
    """Where one answer goes: the message's Matrix thread, or an HTTP response."""

    @property
    def in_room(self) -> bool:
        """True when the answer lives in a Matrix room: approval cards can be posted beside it, and it is
        recorded among the answers given (so an edited question or a reaction finds it)."""

    def working(self) -> AbstractAsyncContextManager[None]:
        """What shows that the model is working, for as long as it does (a typing notice in Matrix)."""

    async def generate(self, request: Any, setup: GenerationSetup) -> Streamed:
        """Run the model for `request` (an `ai.GenerationRequest`), showing it as this channel does.

        Raises the model layer's errors (`GenerationError`, `ModelConfigError`); the caller answers them.
        """

    async def reply(self, text: str, extra: dict[str, Any] | None = None) -> str:
        """Deliver `text` as the answer; returns the id it is known by (a Matrix event id, a completion id)."""

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """Make the streamed answer `event_id` final with `text`."""

    async def error(self, message: str, *, edit_event_id: str | None = None) -> None:
        """Answer with an error, in place of what was streamed so far when `edit_event_id` is given."""

    async def redact(self, event_id: str, reason: str) -> None:
        """Withdraw the streamed answer `event_id` (a hook suppressed it)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What the pipeline hands to an answer: its correlation id, the turn's hook capabilities, and how many
    bot answers the answer will be at the end of (1 for an answer to a person)."""

    correlation_id: str
    bindings: HookBindings
    hops: int = 1
    replaces: AnswerRecord | None = None
    """For an edited question: the earlier answer, edited in place instead of a new one sent."""
    image_ids: tuple[str, ...] = ()
    channel: AnswerChannel | None = None
    """Where the answer goes; None: the message's Matrix thread (`MatrixAnswer`)."""
    edit: EditWatch | None = None
    """For an edited question: whether a newer edit of it came (this one then gives way to it)."""
