"""Model-call contexts, the daemon's own events: `model:before_call` (a gate) and `model:after_call` (an observer).

One turn may call the model several times: once, then once more after each round of tool calls. Each of
those round-trips is one `model:before_call` and one `model:after_call`, numbered by `round_trip` (1, 2, ...).

The messages and parameters are plain data (`dict`s and `list`s, as the chat completions API has them), so
plugins need neither agno nor a provider's SDK. A gate may rewrite them: the rewrite goes to that one request
only, never into the stored conversation, and text it adds is redacted as a person's message is.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mindroom.hooks.hook_context import HookContext
from mindroom.hooks.tool_contexts import snapshot_value
from mindroom.hooks.types import EVENT_MODEL_AFTER_CALL, EVENT_MODEL_BEFORE_CALL

__all__ = ["ModelAfterCallContext", "ModelBeforeCallContext", "ModelCallScope", "request_copy"]


_PRISTINE: Any = object()


def request_copy(value: Any) -> Any:
    """A deep copy of request data (messages, tool schemas): through pickle, whose C code copies JSON-shaped data
    several times faster than a walk in Python (a turn's request is copied a few times per round-trip)."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # noqa: S301 - our own bytes, just made
    except Exception:  # something pickle cannot take: copied the slow way, or shared when it cannot be copied
        return snapshot_value(value)


@dataclass(slots=True, kw_only=True)
class ModelCallScope(HookContext):
    """What both model-call contexts say about the round-trip: whose turn, where, which model, which call."""

    agent_name: str = ""
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    model_id: str = ""
    round_trip: int = 1
    """1 for the turn's first call of the model, 2 for the call after its first round of tool calls, ..."""
    message_received_depth: int = 0

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The agent whose turn it is, and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.requester_id

    def _synthetic_depth(self) -> int:
        return self.message_received_depth + 1


@dataclass(slots=True, kw_only=True)
class ModelBeforeCallContext(ModelCallScope):
    """`model:before_call`: rewrite `messages` or `params` of this one request, or `decline(reason)` to refuse it.

    `messages` are the chat messages as sent (`role`, `content`, and `tool_calls`, `tool_call_id`, `name` where
    the message has them); `params` holds `tools` (the function schemas offered) and `tool_choice`. A declined
    call never reaches the model: the turn's answer is `reason`.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_MODEL_BEFORE_CALL
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("messages", "params", "declined", "decline_reason")

    messages: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    declined: bool = False
    decline_reason: str = ""
    # The request as the run made it (values nobody changes): while the gate's copy still equals it, a hook's
    # rollback point costs a comparison instead of a copy.
    _pristine: tuple[list[dict[str, Any]], dict[str, Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def keep_pristine(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> None:
        """Remember the request as the run made it (equal to `messages` and `params` now; never changed)."""
        self._pristine = (messages, params)

    def decline(self, reason: str) -> None:
        """Refuse this model call; the turn answers with `reason` instead."""
        self.declined = True
        self.decline_reason = str(reason)

    def snapshot_mutable(self) -> Any:
        """The messages and parameters (deep copies: hooks edit them in place), and the decline."""
        pristine = self._pristine
        if pristine is not None and self.messages == pristine[0] and self.params == pristine[1]:
            return (_PRISTINE, _PRISTINE, self.declined, self.decline_reason)
        return (*request_copy((self.messages, self.params)), self.declined, self.decline_reason)

    def restore_mutable(self, snapshot: Any) -> None:
        """Put back values taken by `snapshot_mutable` (a fresh copy of the run's request for a pristine one)."""
        messages, params, self.declined, self.decline_reason = snapshot
        if messages is _PRISTINE and self._pristine is not None:
            messages, params = request_copy(self._pristine)
        self.messages, self.params = messages, params


@dataclass(slots=True, kw_only=True)
class ModelAfterCallContext(ModelCallScope):
    """`model:after_call`: a snapshot of one finished round-trip (its reply, or why there was none)."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_MODEL_AFTER_CALL
    FROZEN: ClassVar[bool] = True

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """The calls the model asked for: `id`, `type` and `function` (`name`, `arguments` as JSON text)."""
    usage: dict[str, int] = field(default_factory=dict)
    """`input_tokens`, `output_tokens` and `total_tokens`, where the provider reported them."""
    latency_ms: float = 0.0
    declined: bool = False
    """A `model:before_call` gate refused the call: the model was not asked."""
    error: str | None = None
    """The failure of a call that got no reply (type and message, redacted)."""

    def hook_copy(self) -> ModelAfterCallContext:
        """A copy with its own tool calls and usage, so one observer's edits reach no other."""
        view = self.clone()
        assert isinstance(view, ModelAfterCallContext)
        view.tool_calls = snapshot_value(self.tool_calls)
        view.usage = dict(self.usage)
        return view
