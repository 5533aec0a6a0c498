"""One hook call, isolated at the plugin boundary: started inline, finished in the same task, accounted for.

`call_hook` runs the hook's first step at once, in a copy of the caller's context; a hook that never
awaits (the common case) is done then, without a timer or a task. A hook that awaits goes on in the
same task under `asyncio.timeout` for what is left of its budget, stepped by `_drive` so each step is
timed and every cancellation reaches the hook as it would through `await`. The hook's own timeouts
consume their own cancellations; one that nobody consumes is the caller's or the engine's, and a hook
that carries on after it is cut off.

`hook_timeout_paused()` stops a hook's clock while it waits for a person (a tool approval): a gate's
200 ms budget is for its own work, and a gate cut off mid-question would let the call through.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import types
from collections.abc import Callable, Generator
from contextvars import Context, copy_context
from enum import IntEnum
from typing import Any

import mindroom.hooks.breaker as breaker
from mindroom.hooks.breaker import BREAKER_COOLDOWN_S
from mindroom.hooks.hook_clock import PAUSE as _PAUSE
from mindroom.hooks.hook_clock import RUN as _RUN
from mindroom.hooks.hook_clock import hook_timeout_paused, when_deadline
from mindroom.hooks.hook_context import HookContextBase
from mindroom.hooks.registry import RegisteredHook
from mindroom.hooks.trace import HOOK_TRACE
from mindroom.logging_config import get_logger, redact_text

__all__ = ["FAILED", "OK", "SKIPPED", "SUSPENDED", "Outcome", "call_hook", "hook_timeout_paused", "record_failure"]

# Hook failures stay logged under the engine's name, which operators already filter on.
logger = get_logger("mindroom.hooks.execution")

_ERROR_TEXT_LIMIT = 300
# How long a hook may keep running after a cancellation it did not consume before it is cut off. Its
# own timeout scopes consume theirs when they close, usually within a loop iteration or two.
_CANCEL_GRACE_S = 0.1

_perf = time.perf_counter


class Outcome(IntEnum):
    """How one hook call ended."""

    OK = 0
    FAILED = 1
    SKIPPED = 2  # its circuit breaker was open
    SUSPENDED = 3  # its first step reached an await; `_finish` runs the rest


# Module-level aliases for the dispatch path: on Python 3.11 `Outcome.OK` costs ~170 ns per lookup
# against ~10 ns for a global (measured with timeit on this project's machine), paid several times per hook.
OK, FAILED, SKIPPED, SUSPENDED = Outcome.OK, Outcome.FAILED, Outcome.SKIPPED, Outcome.SUSPENDED


class _IgnoredCancellationError(Exception):
    """A hook kept running after a cancellation that was not its own."""


class _Run:
    """A hook call past its first await: its coroutine, its context, and what running it taught us."""

    __slots__ = (
        "base",
        "context",
        "coro",
        "deadline",
        "limit_s",
        "max_step",
        "paused_s",
        "start",
        "task",
        "timeout",
        "watching",
    )

    # Set by `_finish` once the hook reaches its first await.
    task: asyncio.Task[Any]
    base: int  # the task's pending cancellation requests when the hook started waiting
    deadline: float  # loop time at which the hook's timeout expires (infinite while its clock is paused)
    timeout: asyncio.Timeout
    limit_s: float

    def __init__(self, coro: Any, context: Context, start: float, first_step: float) -> None:
        self.coro = coro
        self.context = context
        self.start = start
        self.max_step = first_step
        self.watching = False
        self.paused_s = 0.0  # time spent in `hook_timeout_paused`, which the hook's budget does not count


def _describe(exc: BaseException) -> str:
    # Redacted here too, so no secret an exception carries sits in memory for `!hooks` or telemetry.
    text = redact_text(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


def _record_success(hook: RegisteredHook, elapsed_s: float) -> None:
    stats = hook.stats
    stats.durations_ms.append(elapsed_s * 1000.0)
    if stats.breaker.consecutive:
        stats.breaker.success()


def record_failure(
    hook: RegisteredHook, exc: BaseException, elapsed_s: float | None, *, timed_out: bool = False
) -> None:
    """Count one failure (a duration sample unless already taken); the breaker may trip."""
    stats = hook.stats
    if elapsed_s is not None:
        stats.durations_ms.append(elapsed_s * 1000.0)
    stats.failures += 1
    stats.last_error = _describe(exc)
    fields = {"plugin": hook.plugin_name, "hook": hook.hook_name, "hook_event": hook.event_name}
    if timed_out:
        stats.timeouts += 1
        logger.warning("hook timed out", **fields, timeout_ms=hook.timeout_ms)
    else:
        logger.warning("hook failed", **fields, error=stats.last_error)
    if stats.breaker.failure(breaker.now()):
        log = logger.error if hook.fail_closed else logger.warning
        log(
            "hook circuit breaker opened",
            **fields,
            consecutive_failures=stats.breaker.consecutive,
            cooldown_s=BREAKER_COOLDOWN_S,
            fail_closed=hook.fail_closed,
        )


def _settle(hook: RegisteredHook, elapsed_s: float, max_step_s: float, threshold_s: float) -> Outcome:
    """Account for a hook that ran to its end: report a blocked loop; count it failed only past its timeout."""
    if max_step_s > threshold_s:
        hook.stats.blocked_loop += 1
        logger.error(
            "hook blocked the event loop",
            plugin=hook.plugin_name,
            hook=hook.hook_name,
            hook_event=hook.event_name,
            blocked_ms=round(max_step_s * 1000.0, 1),
        )
    if elapsed_s > hook.timeout_s:
        record_failure(hook, TimeoutError(), elapsed_s, timed_out=True)
        return FAILED
    _record_success(hook, elapsed_s)
    return OK


def _skipped(hook: RegisteredHook) -> bool:
    """True (and counted) while the hook's circuit breaker is open."""
    if hook.stats.breaker.allows(breaker.now()):
        return False
    hook.stats.skipped += 1
    return True


def _start(hook: RegisteredHook, ctx: HookContextBase, threshold_s: float) -> tuple[Outcome, Any, _Run | None]:
    """Run a hook up to its first await, in a copy of the emitter's context: (outcome, value, the rest)."""
    stats = hook.stats
    stats.calls += 1
    trace = HOOK_TRACE.get()
    if trace is not None:
        trace.append(f"{hook.plugin_name}:{hook.hook_name}")
    # Its own context keeps what the hook sets (a ContextVar, structlog's bound values) to itself; the copy
    # and `Context.run` cost ~0.15 us per hook (timeit, Python 3.11).
    context = copy_context()
    start = _perf()
    try:
        coro = hook.callback(ctx)
        yielded = context.run(coro.send, None)
    except StopIteration as stop:
        elapsed = _perf() - start
        if elapsed <= threshold_s and elapsed <= hook.timeout_s:
            stats.durations_ms.append(elapsed * 1000.0)
            if stats.breaker.consecutive:
                stats.breaker.success()
            return OK, stop.value, None
        outcome = _settle(hook, elapsed, elapsed, threshold_s)
        return outcome, stop.value if outcome is OK else None, None
    except BaseException as exc:  # the hook's own failure, whatever its type
        record_failure(hook, exc, _perf() - start)
        return FAILED, None, None
    return SUSPENDED, yielded, _Run(coro, context, start, _perf() - start)


def _cut_off(run: _Run) -> None:
    """Stop driving the hook (its `finally` blocks run) and end it with a cancellation."""
    with contextlib.suppress(BaseException):  # whatever the hook's cleanup raises is its own
        run.context.run(run.coro.close)
    raise asyncio.CancelledError


def _check_cancellation(run: _Run, finished: bool) -> None:
    """After a step that followed a cancellation: is the hook still entitled to go on?"""
    if run.timeout.expired():  # our deadline (or grace) passed and the hook carries on regardless
        _cut_off(run)
    if run.task.cancelling() > run.base:
        # A cancellation request nobody has consumed: the caller's, or one of the hook's own scopes that
        # is still closing. Returning settles it (its scopes are closed); otherwise give it a grace.
        if finished:
            raise asyncio.CancelledError
        if not run.watching:
            run.watching = True
            run.timeout.reschedule(min(run.deadline, asyncio.get_running_loop().time() + _CANCEL_GRACE_S))
    elif run.watching:
        run.watching = False
        run.timeout.reschedule(when_deadline(run.deadline))


@types.coroutine
def _drive(run: _Run, yielded: Any) -> Generator[Any, Any, Any]:
    """Step the hook as its task asks, in the hook's context, timing each step; like `await`, but watchful."""
    coro, enter = run.coro, run.context.run
    while True:
        thrown: BaseException | None = None
        try:
            sent = yield yielded
        except GeneratorExit:
            enter(coro.close)
            raise
        except BaseException as exc:  # delivered by the task: a cancellation, passed on to the hook
            thrown = exc
        start = _perf()
        try:
            yielded = enter(coro.send, sent) if thrown is None else enter(coro.throw, thrown)
        except StopIteration as stop:
            run.max_step = max(run.max_step, _perf() - start)
            if thrown is not None or run.watching:
                _check_cancellation(run, finished=True)
            return stop.value
        except BaseException:
            run.max_step = max(run.max_step, _perf() - start)
            raise
        run.max_step = max(run.max_step, _perf() - start)
        if thrown is not None or run.watching:
            _check_cancellation(run, finished=False)


async def _finish(hook: RegisteredHook, run: _Run, yielded: Any, threshold_s: float) -> tuple[Outcome, Any]:
    """The rest of a hook that reached an await, in this same task, bounded by what remains of its timeout."""
    task = asyncio.current_task()
    assert task is not None
    run.task = task
    run.base = task.cancelling()
    run.limit_s = hook.timeout_s
    run.context.run(_RUN.set, run)
    pause = run.context.get(_PAUSE)
    if pause is not None and pause.run is None:  # it began waiting for a person before its first await
        pause.run = run
        run.deadline = math.inf
    else:
        run.deadline = task.get_loop().time() + hook.timeout_s - (_perf() - run.start)
    run.timeout = timeout = asyncio.timeout_at(when_deadline(run.deadline))
    try:
        async with timeout:
            value = await _drive(run, yielded)
    except asyncio.CancelledError as exc:
        if task.cancelling() > run.base:
            raise  # the caller's cancellation
        record_failure(hook, exc, _perf() - run.start)
        return FAILED, None
    except TimeoutError as exc:
        error: BaseException = exc
        if timeout.expired() and task.get_loop().time() < run.deadline:  # cut off after the grace, not the deadline
            error = _IgnoredCancellationError(f"still running {_CANCEL_GRACE_S * 1000:.0f} ms after a cancellation")
        timed_out = error is exc and timeout.expired()
        record_failure(hook, error, _perf() - run.start, timed_out=timed_out)
        return FAILED, None
    except BaseException as exc:  # the hook's own failure, whatever its type
        record_failure(hook, exc, _perf() - run.start)
        return FAILED, None
    outcome = _settle(hook, _perf() - run.start - run.paused_s, run.max_step, threshold_s)
    return outcome, value if outcome is OK else None


async def call_hook(
    hook: RegisteredHook, ctx: HookContextBase, threshold_s: float, on_suspend: Callable[[], None] | None = None
) -> tuple[Outcome, Any]:
    """Run one hook, isolated and bounded by its timeout, from its first step to its end in this task."""
    # A required startup hook is never skipped: its failure must fail the start, not pass unnoticed.
    if hook.stats.breaker.open_until and not hook.required and _skipped(hook):
        return SKIPPED, None
    outcome, value, run = _start(hook, ctx, threshold_s)
    if run is None:
        return outcome, value
    if on_suspend is not None:
        on_suspend()
    return await _finish(hook, run, value, threshold_s)
