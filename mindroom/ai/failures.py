"""Provider failures: capture the real cause inside agno's run loop and turn it into one `GenerationError`.

agno catches model errors inside `Agent.arun` and only keeps their text, so the models we build report
the original exception here, keyed by the agno run id that generation chose for the turn.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar, cast

import httpx
from agno.exceptions import AgnoError
from agno.models.base import Model
from agno.models.response import ModelResponse

from mindroom.ai.errors import GenerationError

__all__ = ["FailureLog", "failure_log", "generation_error", "reporting_class"]

_ModelT = TypeVar("_ModelT", bound=Model)
_AGNO_DEFAULT_STATUS = 502


class FailureLog:
    """The first provider exception of each run that generation is watching, by agno run id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, BaseException | None] = {}

    def watch(self, run_id: str) -> None:
        """Start recording failures for `run_id`."""
        with self._lock:
            self._failures[run_id] = None

    def note(self, run_id: str | None, error: BaseException) -> None:
        """Record `error` for a watched run (the first one wins; unwatched runs are ignored)."""
        with self._lock:
            if run_id in self._failures and self._failures[run_id] is None:
                self._failures[run_id] = error

    def pop(self, run_id: str) -> BaseException | None:
        """Stop watching `run_id` and return its recorded failure, if any."""
        with self._lock:
            return self._failures.pop(run_id, None)


failure_log = FailureLog()


def _run_id_of(kwargs: dict[str, Any]) -> str | None:
    run_response = kwargs.get("run_response")
    run_id = getattr(run_response, "run_id", None)
    return run_id if isinstance(run_id, str) else None


class _ReportsFailures(Model):
    """Mixed in front of an agno model class: report exceptions of model calls to `failure_log`."""

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


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


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


def generation_error(error: BaseException | None) -> GenerationError:
    """The one user-facing `GenerationError` for a provider failure (never includes provider text)."""
    errors = list(_chain(error))
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
