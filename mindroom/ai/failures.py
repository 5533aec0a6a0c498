"""Provider failures: capture the real cause inside agno's run loop and turn it into one `GenerationError`.

agno catches model errors inside `Agent.arun` and only keeps their text, so the models we build report
the original exception here, keyed by the agno run id that generation chose for the turn.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any, TypeVar, cast

import httpx
from agno.exceptions import AgnoError, ContextWindowExceededError, ModelProviderError
from agno.models.base import Model
from agno.models.response import ModelResponse

from mindroom.ai.errors import GenerationError
from mindroom.ai.model_hooks import model_call_hooks
from mindroom.ai.resilience import (
    CallPolicy,
    RetryBudget,
    StreamStalledError,
    call_with_retries,
    error_chain,
    stream_with_retries,
)

__all__ = [
    "CALL_POLICY_ATTRIBUTE",
    "FailureLog",
    "context_overflow",
    "failure_log",
    "generation_error",
    "reporting_class",
]

_ModelT = TypeVar("_ModelT", bound=Model)
_AGNO_DEFAULT_STATUS = 502
_OVERFLOW_PATTERNS = tuple(p for p in ModelProviderError.CONTEXT_WINDOW_PATTERNS if p != "max_tokens")
"""agno's wordings of a context overflow, less one that also names a bad `max_tokens` setting."""


class FailureLog:
    """The first provider exception of each run that generation is watching, and its retry budget, by run id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, BaseException | None] = {}
        self._budgets: dict[str, RetryBudget] = {}

    def watch(self, run_id: str) -> None:
        """Start recording failures for `run_id` (with a fresh retry budget)."""
        with self._lock:
            self._failures[run_id] = None
            self._budgets[run_id] = RetryBudget()

    def note(self, run_id: str | None, error: BaseException) -> None:
        """Record `error` for a watched run (the first one wins; unwatched runs are ignored)."""
        with self._lock:
            if run_id in self._failures and self._failures[run_id] is None:
                self._failures[run_id] = error

    def budget(self, run_id: str | None) -> RetryBudget:
        """The retry budget of a watched run; a fresh one for a call outside any (a summary, a probe)."""
        with self._lock:
            budget = self._budgets.get(run_id) if run_id is not None else None
        return budget if budget is not None else RetryBudget()

    def pop(self, run_id: str) -> BaseException | None:
        """Stop watching `run_id` and return its recorded failure, if any."""
        with self._lock:
            self._budgets.pop(run_id, None)
            return self._failures.pop(run_id, None)


failure_log = FailureLog()


def _run_id_of(kwargs: dict[str, Any]) -> str | None:
    run_response = kwargs.get("run_response")
    run_id = getattr(run_response, "run_id", None)
    return run_id if isinstance(run_id, str) else None


def _shows(response: Any) -> bool:
    """A stream item the reader sees: text, a tool call or reasoning."""
    return bool(
        getattr(response, "content", None)
        or getattr(response, "tool_calls", None)
        or getattr(response, "reasoning_content", None)
    )


CALL_POLICY_ATTRIBUTE = "_mindroom_call_policy"
"""Where a built model keeps its `CallPolicy` (set by `mindroom.ai.models.build_model`)."""
_NO_RETRIES = CallPolicy(max_retries=0)


class _ReportsFailures(Model):
    """Mixed in front of an agno model class: retries its provider calls as its `CallPolicy` says, and
    reports the exception of a call that failed for good to `failure_log`."""

    def _call_policy(self) -> CallPolicy:
        policy = getattr(self, CALL_POLICY_ATTRIBUTE, None)
        return policy if isinstance(policy, CallPolicy) else _NO_RETRIES

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """The provider's answer to one request (through the turn's model-call hooks, when it has any)."""
        hooks = model_call_hooks()
        if hooks is not None and not args:  # agno passes a round-trip's request by keyword
            return await hooks.invoke(self, kwargs, self._retried_invoke)
        # `_retried_invoke`'s body, inline: a turn without model-call hooks pays no coroutine more per request.
        budget = failure_log.budget(_run_id_of(kwargs))
        call = super().ainvoke  # type: ignore[safe-super]
        return await call_with_retries(lambda: call(*args, **kwargs), self._call_policy(), budget, self.id)

    async def _retried_invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """The provider's answer to one request, retried on rate limits, 5xx and dropped connections."""
        budget = failure_log.budget(_run_id_of(kwargs))
        call = super().ainvoke  # type: ignore[safe-super]
        return await call_with_retries(lambda: call(*args, **kwargs), self._call_policy(), budget, self.id)

    def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        """The provider's streamed answer (through the turn's model-call hooks, when it has any)."""
        hooks = model_call_hooks()
        if hooks is not None and not args:  # agno passes a round-trip's request by keyword
            return hooks.stream(self, kwargs, self._retried_invoke_stream)
        return self._retried_invoke_stream(*args, **kwargs)

    async def _retried_invoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        """The provider's streamed answer, retried as `stream_with_retries` says."""
        budget = failure_log.budget(_run_id_of(kwargs))
        open_stream = super().ainvoke_stream  # type: ignore[safe-super]
        stream = stream_with_retries(
            lambda: open_stream(*args, **kwargs),
            self._call_policy(),
            budget,
            self.id,
            _shows,
        )
        async for item in stream:
            yield item

    async def aresponse(self, *args: Any, **kwargs: Any) -> ModelResponse:
        try:
            return await super().aresponse(*args, **kwargs)
        except Exception as error:
            failure_log.note(_run_id_of(kwargs), error)
            raise

    async def aresponse_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        try:
            async for item in super().aresponse_stream(*args, **kwargs):
                yield item
        except Exception as error:
            failure_log.note(_run_id_of(kwargs), error)
            raise


_REPORTING_CLASSES: dict[type[Model], type[Model]] = {}
_REPORTING_LOCK = threading.Lock()


def reporting_class(model_class: type[_ModelT]) -> type[_ModelT]:
    """A subclass of an agno model class that reports its failures (one subclass per class)."""
    with _REPORTING_LOCK:
        subclass = _REPORTING_CLASSES.get(model_class)
        if subclass is None:
            namespace = {"__module__": __name__, "__doc__": model_class.__doc__, "__qualname__": model_class.__name__}
            subclass = type(model_class.__name__, (_ReportsFailures, model_class), namespace)
            _REPORTING_CLASSES[model_class] = subclass
    return cast("type[_ModelT]", subclass)


def _is_timeout(error: BaseException) -> bool:
    return isinstance(error, TimeoutError | httpx.TimeoutException) or "Timeout" in type(error).__name__


def _is_unreachable(error: BaseException) -> bool:
    return isinstance(error, ConnectionError | httpx.TransportError) or type(error).__name__ == "APIConnectionError"


def _status_code(errors: list[BaseException]) -> int | None:
    for error in errors:
        status = error.response.status_code if isinstance(error, httpx.HTTPStatusError) else None
        status = getattr(error, "status_code", status)
        if not isinstance(status, int):
            continue
        if isinstance(error, AgnoError) and status == _AGNO_DEFAULT_STATUS:
            continue  # agno's default when the provider gave no status; a real one sits further down the chain
        return status
    return None


def context_overflow(error: BaseException | None) -> bool:
    """The provider refused the request because it does not fit the model's context window."""
    for item in error_chain(error):
        if isinstance(item, ContextWindowExceededError):
            return True
        status = getattr(item, "status_code", None)
        if status in (400, 413) or (isinstance(item, AgnoError) and status == _AGNO_DEFAULT_STATUS):
            text = f"{getattr(item, 'message', '')} {item}".lower()
            if any(pattern in text for pattern in _OVERFLOW_PATTERNS):
                return True
    return False


def generation_error(error: BaseException | None) -> GenerationError:
    """The one user-facing `GenerationError` for a provider failure (never includes provider text)."""
    errors = list(error_chain(error))
    if any(isinstance(item, StreamStalledError) for item in errors):
        return GenerationError("The model went silent part-way through its answer.", kind="stalled")
    if context_overflow(error):
        return GenerationError(
            "The conversation is too long for this model, even after shortening its history.", kind="context_overflow"
        )
    if any(_is_timeout(item) for item in errors):
        return GenerationError("The model did not answer in time.", kind="timeout")
    if any(_is_unreachable(item) for item in errors):
        return GenerationError("The model is unreachable right now.", kind="unreachable")
    status = _status_code(errors)
    if status in (401, 403):
        return GenerationError(
            f"The model rejected the credentials (HTTP {status}).", kind="rejected", status_code=status
        )
    if status == 429:
        return GenerationError("The model is rate-limited right now (HTTP 429).", kind="rate_limited", status_code=429)
    if status is not None:
        return GenerationError(f"The model is unavailable right now (HTTP {status}).", kind="http", status_code=status)
    return GenerationError("The model failed to answer.", kind="failed")
