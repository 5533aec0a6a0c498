"""Model calls that survive what providers do: rate limits, 5xx answers, dropped connections and stalled streams.

One call to the provider (not a whole turn) is the unit: a call that failed with a rate limit, a 5xx or a
lost connection is tried again after a backoff (the provider's `Retry-After` when it sends one), at most
`max_retries` times, and never past the turn's retry budget. A streamed call that sends nothing for
`stream_idle_timeout_s` is cut; it is tried once more when it had shown nothing yet (text or a tool call),
and fails as a stall otherwise, since a second answer would repeat what the reader already saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from agno.exceptions import AgnoError

from mindroom.ai.errors import GenerationError
from mindroom.backoff import Backoff
from mindroom.logging_config import get_logger

__all__ = [
    "TURN_RETRY_BUDGET_S",
    "CallPolicy",
    "RetryBudget",
    "StreamStalledError",
    "call_with_retries",
    "error_chain",
    "retry_after_s",
    "retryable",
    "stream_with_retries",
]

logger = get_logger(__name__)

_T = TypeVar("_T")

TURN_RETRY_BUDGET_S = 60.0
"""The most time one turn spends waiting between retries, over all its model calls."""
_BACKOFF = Backoff(first_s=0.5, max_s=8.0, jitter=(0.8, 1.2))
"""The wait before a retry the provider named no time for: from half a second, doubling, to 8 s, spread by a fifth."""
_MAX_RETRY_AFTER_S = 30.0
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_AGNO_DEFAULT_STATUS = 502


class StreamStalledError(GenerationError):
    """A streamed model call sent nothing for longer than its idle limit."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__("The model went silent part-way through its answer.", kind="stalled")


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """How one model's calls are retried: how often, and how long its stream may stay silent (None: forever)."""

    max_retries: int
    stream_idle_timeout_s: float | None = None


class RetryBudget:
    """The seconds of backoff a turn may still spend (shared by its model calls, which run one at a time)."""

    __slots__ = ("remaining_s",)

    def __init__(self, seconds: float = TURN_RETRY_BUDGET_S) -> None:
        self.remaining_s = seconds

    def take(self, seconds: float) -> bool:
        """Spend `seconds` if the budget still has them."""
        if seconds > self.remaining_s:
            return False
        self.remaining_s -= seconds
        return True


def error_chain(error: BaseException | None) -> Iterator[BaseException]:
    """`error`, then its causes and contexts (each once)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def retryable(error: BaseException) -> bool:
    """A failure worth another try: a rate limit, a 5xx, or a connection that failed or dropped."""
    for item in error_chain(error):
        if isinstance(item, asyncio.CancelledError | StreamStalledError):
            return False
        if isinstance(item, httpx.TimeoutException) or "Timeout" in type(item).__name__:
            return False  # a provider that took its whole timeout would take it again
        if isinstance(item, ConnectionError | httpx.TransportError) or type(item).__name__ == "APIConnectionError":
            return True
        status = _status(item)
        if status is None or (isinstance(item, AgnoError) and status == _AGNO_DEFAULT_STATUS):
            continue  # agno's default when the provider gave no status; a real one may sit further down
        return status in _RETRYABLE_STATUS or status >= 500
    return False


def retry_after_s(error: BaseException) -> float | None:
    """The wait the provider asked for (`Retry-After`, in seconds or as a date), if it did."""
    for item in error_chain(error):
        headers = getattr(getattr(item, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if not value:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            with contextlib.suppress(TypeError, ValueError):
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    return None


def _backoff_s(error: BaseException, attempt: int) -> float:
    asked = retry_after_s(error)
    if asked is not None:
        return min(asked, _MAX_RETRY_AFTER_S)
    return _BACKOFF.delay(attempt + 1)


async def _wait_before_retry(error: BaseException, attempt: int, budget: RetryBudget, label: str) -> bool:
    """Sleep before retry number `attempt + 1`; False when the turn's budget cannot pay for the wait."""
    delay = _backoff_s(error, attempt)
    if not budget.take(delay):
        logger.warning("model retry budget spent", model=label, attempt=attempt + 1, delay_s=round(delay, 2))
        return False
    logger.warning(
        "model call failed; retrying",
        model=label,
        attempt=attempt + 1,
        delay_s=round(delay, 2),
        error=type(error).__name__,
        status_code=next((s for s in map(_status, error_chain(error)) if s is not None), None),
    )
    await asyncio.sleep(delay)
    return True


async def call_with_retries(
    call: Callable[[], Awaitable[_T]], policy: CallPolicy, budget: RetryBudget, label: str
) -> _T:
    """`await call()`, tried again on retryable failures (see the module's docstring)."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as error:
            if attempt >= policy.max_retries or not retryable(error):
                raise
            if not await _wait_before_retry(error, attempt, budget, label):
                raise
            attempt += 1


async def _idle_limited(stream: AsyncIterator[_T], seconds: float | None) -> AsyncIterator[_T]:
    """The items of `stream`; `StreamStalledError` when the next one takes longer than `seconds`."""
    while True:
        limit = asyncio.timeout(seconds)
        try:
            async with limit:
                item = await anext(stream)
        except StopAsyncIteration:
            return
        except TimeoutError:
            if seconds is not None and limit.expired():
                raise StreamStalledError(seconds) from None
            raise
        yield item


async def _close(stream: Any) -> None:
    closer = getattr(stream, "aclose", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            await closer()


async def stream_with_retries(
    open_stream: Callable[[], AsyncIterator[_T]],
    policy: CallPolicy,
    budget: RetryBudget,
    label: str,
    shows: Callable[[_T], bool],
) -> AsyncIterator[_T]:
    """The items of a fresh `open_stream()`, opened again after a retryable failure or a stall while nothing
    that `shows` was yielded yet (see the module's docstring)."""
    attempt = 0
    stall_retried = False
    while True:
        shown = False
        stream = open_stream()
        try:
            async for item in _idle_limited(stream, policy.stream_idle_timeout_s):
                shown = shown or shows(item)
                yield item
            return
        except StreamStalledError:
            if shown or stall_retried:
                raise
            stall_retried = True
            logger.warning("model stream stalled; retrying", model=label, idle_s=policy.stream_idle_timeout_s)
        except Exception as error:
            if shown or attempt >= policy.max_retries or not retryable(error):
                raise
            if not await _wait_before_retry(error, attempt, budget, label):
                raise
            attempt += 1
        finally:
            await _close(stream)
