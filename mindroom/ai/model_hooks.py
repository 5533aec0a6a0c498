"""Model-call hooks at agno's per-round-trip seam: `model:before_call` and `model:after_call` around each request.

agno calls a model's `ainvoke` (or `ainvoke_stream`) once per round-trip of a run: the first request, then one
after each round of tool calls. The models the daemon builds check one context variable there (`_ReportsFailures`
in `mindroom.ai.failures`); a turn sets it only when a plugin has a model-call hook for the turn's agent and room
(`turn_model_hooks`), so a turn without such plugins pays one variable lookup per request and nothing else.

The gate sees the request as plain data. A rewrite is sent in place of that one request: agno's run keeps its
own messages, so the stored conversation is what it would have been, and text a hook wrote is redacted like a
person's message. A refused call never reaches the model: the answer of that round-trip is the refusal.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from mindroom.hooks.execution import emit
from mindroom.hooks.model_contexts import ModelAfterCallContext, ModelBeforeCallContext, request_copy
from mindroom.hooks.model_gate import emit_model_gate
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.tool_contexts import snapshot_value
from mindroom.hooks.types import EVENT_MODEL_AFTER_CALL, EVENT_MODEL_BEFORE_CALL
from mindroom.logging_config import get_logger, redact_message, redact_text
from mindroom.tool_system.runtime_context import get_runtime_context

__all__ = [
    "TurnModelHooks",
    "as_agent",
    "model_call_hooks",
    "model_hooks_for_turn",
    "set_turn_model_hooks",
    "turn_model_hooks",
]

logger = get_logger(__name__)

_HOOKS: ContextVar[TurnModelHooks | None] = ContextVar("mindroom_model_call_hooks", default=None)
_BEFORE_LOGGER = get_logger("mindroom.plugins").bind(event_name=EVENT_MODEL_BEFORE_CALL)
_AFTER_LOGGER = get_logger("mindroom.plugins").bind(event_name=EVENT_MODEL_AFTER_CALL)
_MESSAGE_KEYS = ("tool_calls", "tool_call_id", "name")

_Invoke = Callable[..., Awaitable[ModelResponse]]
_OpenStream = Callable[..., AsyncIterator[ModelResponse]]


def model_call_hooks() -> TurnModelHooks | None:
    """The running turn's model-call hooks, or None (no plugin listens: requests go out untouched)."""
    return _HOOKS.get()


def _message_data(message: Message) -> dict[str, Any]:
    """The message as plain data, holding the message's own values (the caller copies the whole list once)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    for key in _MESSAGE_KEYS:
        value = getattr(message, key, None)
        if value:
            data[key] = value
    return data


def _redacted(content: Any) -> Any:
    if isinstance(content, str):
        return redact_message(content)
    if isinstance(content, list):
        return [
            {**part, "text": redact_message(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    return content


def _rebuilt(originals: list[Message], sent: list[dict[str, Any]], asked: list[dict[str, Any]]) -> list[Message]:
    """The messages to send for a rewrite: an unchanged message is the run's own (its images and all), a new or
    changed one is built from the hook's data, its text redacted.

    Hooks mostly append, insert or edit a few messages, so each one sent is looked for among the run's own from
    where the last match was, by dict equality (which stops at the first difference).
    """
    messages = []
    start = 0
    for data in sent:
        match = next((index for index in range(start, len(asked)) if asked[index] == data), None)
        if match is not None:
            messages.append(originals[match])
            start = match + 1
            continue
        fields = {key: data[key] for key in _MESSAGE_KEYS if data.get(key)}
        messages.append(Message(role=data["role"], content=_redacted(data.get("content")), **fields))
    return messages


def _usage(response: ModelResponse | None) -> dict[str, int]:
    metrics = getattr(response, "response_usage", None)
    if metrics is None:
        return {}
    names = ("input_tokens", "output_tokens", "total_tokens")
    return {name: value for name in names if isinstance(value := getattr(metrics, name, None), int)}


def _error_text(error: BaseException) -> str:
    return redact_text(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)


class TurnModelHooks:
    """One turn's model-call hooks: the registry, who the turn is for, and how many round-trips it made."""

    __slots__ = ("after", "before", "registry", "round_trips", "scope")

    def __init__(self, registry: HookRegistry, scope: dict[str, Any], *, before: bool, after: bool) -> None:
        self.registry = registry
        self.scope = scope
        self.before = before
        self.after = after
        self.round_trips = 0

    async def _gate(self, model: Model, kwargs: dict[str, Any], round_trip: int) -> dict[str, Any] | str:
        """The request to send (the given one, or the gates' rewrite), or the reason it was refused."""
        originals: list[Message] = list(kwargs.get("messages") or [])
        asked = [_message_data(message) for message in originals]
        params = {key: kwargs.get(key) for key in ("tools", "tool_choice")}
        # The gate edits copies: `asked` and `params` keep the run's own values, which nothing changes.
        messages, offered = request_copy((asked, params))
        gate = ModelBeforeCallContext(
            model_id=str(model.id),
            round_trip=round_trip,
            messages=messages,
            params=offered,
            logger=_BEFORE_LOGGER,
            **self.scope,
        )
        gate.keep_pristine(asked, params)
        await emit_model_gate(self.registry, gate)
        if gate.declined:
            logger.info("model call declined", agent=gate.agent_name, round_trip=round_trip, reason=gate.decline_reason)
            return gate.decline_reason or "The model call was declined."
        if gate.messages == asked and gate.params == params:
            return kwargs
        sent = dict(kwargs)
        sent["messages"] = _rebuilt(originals, gate.messages, asked)
        sent["tools"] = gate.params.get("tools")
        sent["tool_choice"] = gate.params.get("tool_choice")
        return sent

    async def _observe(
        self,
        model: Model,
        round_trip: int,
        started: float,
        *,
        text: str = "",
        tool_calls: list[dict[str, Any]] | None = None,
        usage: dict[str, int] | None = None,
        declined: bool = False,
        error: BaseException | None = None,
    ) -> None:
        ctx = ModelAfterCallContext(
            model_id=str(model.id),
            round_trip=round_trip,
            text=text,
            tool_calls=snapshot_value(tool_calls or []),
            usage=usage or {},
            latency_ms=(time.perf_counter() - started) * 1000.0,
            declined=declined,
            error=None if error is None else _error_text(error),
            logger=_AFTER_LOGGER,
            **self.scope,
        )
        await emit(self.registry, EVENT_MODEL_AFTER_CALL, ctx)

    async def _start(self, model: Model, kwargs: dict[str, Any]) -> tuple[int, float, dict[str, Any] | str]:
        self.round_trips += 1
        round_trip = self.round_trips
        request: dict[str, Any] | str = await self._gate(model, kwargs, round_trip) if self.before else kwargs
        return round_trip, time.perf_counter(), request

    async def invoke(self, model: Model, kwargs: dict[str, Any], call: _Invoke) -> ModelResponse:
        """One request through the hooks: the gate, the call (unless refused), the observers."""
        round_trip, started, request = await self._start(model, kwargs)
        if isinstance(request, str):
            if self.after:
                await self._observe(model, round_trip, started, declined=True)
            return ModelResponse(role="assistant", content=request)
        try:
            response = await call(**request)
        except Exception as error:
            if self.after:
                await self._observe(model, round_trip, started, error=error)
            raise
        if self.after:
            text = response.content if isinstance(response.content, str) else ""
            calls = response.tool_calls or []
            await self._observe(model, round_trip, started, text=text, tool_calls=calls, usage=_usage(response))
        return response

    async def stream(
        self, model: Model, kwargs: dict[str, Any], open_stream: _OpenStream
    ) -> AsyncIterator[ModelResponse]:
        """One streamed request through the hooks; the observers see the whole reply once the stream ends."""
        round_trip, started, request = await self._start(model, kwargs)
        if isinstance(request, str):
            if self.after:
                await self._observe(model, round_trip, started, declined=True)
            yield ModelResponse(role="assistant", content=request)
            return
        texts: list[str] = []
        deltas: list[Any] = []
        usage: dict[str, int] = {}
        try:
            async for item in open_stream(**request):
                if isinstance(item, ModelResponse):
                    if isinstance(item.content, str):
                        texts.append(item.content)
                    deltas.extend(item.tool_calls or ())
                    usage = _usage(item) or usage
                yield item
        except Exception as error:
            if self.after:
                await self._observe(model, round_trip, started, error=error)
            raise
        if self.after:
            calls = _tool_calls(model, deltas)
            await self._observe(model, round_trip, started, text="".join(texts), tool_calls=calls, usage=usage)


def _tool_calls(model: Model, deltas: list[Any]) -> list[dict[str, Any]]:
    """The tool calls of a streamed reply, assembled from its pieces as the model's class does it."""
    if not deltas:
        return []
    try:
        return list(model.parse_tool_calls(deltas))
    except Exception as error:  # a provider's pieces this class cannot assemble: observers get none
        logger.warning("tool calls of a streamed reply not assembled", model=model.id, error=str(error))
        return []


def turn_model_hooks(agent_name: str) -> TurnModelHooks | None:
    """The model-call hooks of the turn bound now (`bind_runtime_context`), or None when no plugin has any for
    this agent and room."""
    bound = get_runtime_context()
    if bound is None:
        return None
    registry, room_id = bound.registry, bound.room_id
    before = bool(registry.matching(EVENT_MODEL_BEFORE_CALL, agent_name, room_id))
    after = bool(registry.matching(EVENT_MODEL_AFTER_CALL, agent_name, room_id))
    if not (before or after):
        return None
    scope: dict[str, Any] = {
        "agent_name": agent_name,
        "room_id": room_id,
        "thread_id": bound.thread_id,
        "requester_id": bound.requester_id,
        "session_id": bound.session_id,
        "config": bound.config,
        "runtime_paths": bound.runtime_paths,
        "message_sender": bound.message_sender,
        "room_state_querier": bound.room_state_querier,
        "room_state_putter": bound.room_state_putter,
        "message_received_depth": bound.message_received_depth,
    }
    if bound.correlation_id:
        scope["correlation_id"] = bound.correlation_id
    return TurnModelHooks(registry, scope, before=before, after=after)


def set_turn_model_hooks(agent_name: str) -> None:
    """Set this task's model-call hooks for the turn about to run (for a task that lives only for one run)."""
    _HOOKS.set(turn_model_hooks(agent_name))


@contextlib.contextmanager
def model_hooks_for_turn(agent_name: str) -> Iterator[None]:
    """Within the block, this task's model requests go through the turn's model-call hooks, if it has any."""
    token = _HOOKS.set(turn_model_hooks(agent_name))
    try:
        yield
    finally:
        _HOOKS.reset(token)


def as_agent(agent_name: str, run: Any) -> Any:
    """A run of another agent inside this turn (a team member's), its model requests through the hooks of
    `agent_name` (a plugin sees the member's name, and its filters match the member), the turn's own after it.

    `run` is agno's run: an awaitable, or an async iterator of events when streamed. For a stream the hooks are
    set only while the member's next event is awaited, so the team between two events keeps its own."""
    hooks = turn_model_hooks(agent_name)
    if inspect.isawaitable(run):
        return _awaited_as(hooks, run)
    return _iterated_as(hooks, run)


async def _awaited_as(hooks: TurnModelHooks | None, run: Awaitable[Any]) -> Any:
    token = _HOOKS.set(hooks)
    try:
        return await run
    finally:
        _HOOKS.reset(token)


async def _iterated_as(hooks: TurnModelHooks | None, events: Any) -> AsyncIterator[Any]:
    iterator = aiter(events)
    try:
        while True:
            token = _HOOKS.set(hooks)
            try:
                event = await anext(iterator)
            except StopAsyncIteration:
                return
            finally:
                _HOOKS.reset(token)
            yield event
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
