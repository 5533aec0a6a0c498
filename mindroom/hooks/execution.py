"""Running hooks: one function per execution mode, each hook isolated at the plugin boundary.

Every hook call is timed, bounded by its timeout, and contained: an exception (including
`SystemExit` and `KeyboardInterrupt`), a timeout, or a synchronous block of the event loop counts
as a failure of that hook alone. The caller's own cancellation always propagates.

A hook's first step runs inline: a hook that finishes without suspending (the common case) never
pays for a timer. A hook that suspends continues under `asyncio.timeout` for what is left of its
budget, and each of its steps is timed so that one blocking the loop is caught.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import types
from collections.abc import Generator, Iterable
from contextvars import ContextVar
from typing import Any

import mindroom.hooks.breaker as breaker
from mindroom.hooks.breaker import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD
from mindroom.hooks.context import (
    BeforeResponseContext,
    HookContext,
    MessageEnrichContext,
    ResponseDraft,
    ToolBeforeCallContext,
)
from mindroom.hooks.enrichment import EnrichmentItem
from mindroom.hooks.registry import HookRegistry, RegisteredHook
from mindroom.logging_config import get_logger

__all__ = [
    "BREAKER_COOLDOWN_S",
    "BREAKER_THRESHOLD",
    "COLLECTOR_CONCURRENCY",
    "MAX_EMIT_DEPTH",
    "emit",
    "emit_collect",
    "emit_gate",
    "emit_transform",
]

logger = get_logger(__name__)

COLLECTOR_CONCURRENCY = 10
MAX_EMIT_DEPTH = 3
_ERROR_TEXT_LIMIT = 300

_emit_depth: ContextVar[int] = ContextVar("mindroom_hook_emit_depth", default=0)
_perf = time.perf_counter

# Outcome of one hook call.
_OK = 0
_FAILED = 1
_SKIPPED = 2
_SUSPENDED = 3


class _HookBlockedLoopError(Exception):
    """A hook ran synchronously for longer than the blocking threshold."""


class _InvalidHookResultError(Exception):
    """A hook returned something its mode cannot use."""


@types.coroutine
def _resume(coro: Any, yielded: Any, max_step: list[float]) -> Generator[Any, Any, Any]:
    """Drive a hook coroutine that already ran its first step, timing each further step."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # delivered by the task: our timeout's cancellation or the caller's
            # Whether the hook re-raises, returns or swallows the cancellation and goes on, the
            # cancellation stands: a swallowing hook is no longer driven, so it is cut off all the same.
            with contextlib.suppress(BaseException):
                coro.throw(exc)
                coro.close()
            raise
        else:
            start = _perf()
            try:
                yielded = coro.send(sent)
            except StopIteration as stop:
                _note_step(max_step, start)
                return stop.value
            _note_step(max_step, start)


def _note_step(max_step: list[float], start: float) -> None:
    elapsed = _perf() - start
    if elapsed > max_step[0]:
        max_step[0] = elapsed


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


def _record_success(hook: RegisteredHook, elapsed_s: float) -> None:
    stats = hook.stats
    stats.durations_ms.append(elapsed_s * 1000.0)
    if stats.breaker.consecutive:
        stats.breaker.success()


def _record_failure(
    hook: RegisteredHook, exc: BaseException, elapsed_s: float | None, *, timed_out: bool = False
) -> None:
    """Count one failure (a duration sample unless already taken) and open the breaker after 5 in a row."""
    stats = hook.stats
    if elapsed_s is not None:
        stats.durations_ms.append(elapsed_s * 1000.0)
    stats.failures += 1
    stats.last_error = _describe(exc)
    if timed_out:
        stats.timeouts += 1
        logger.warning(
            "hook timed out",
            plugin=hook.plugin_name,
            hook=hook.hook_name,
            hook_event=hook.event_name,
            timeout_ms=hook.timeout_ms,
        )
    elif isinstance(exc, _HookBlockedLoopError):
        stats.blocked_loop += 1
        logger.error(
            "hook blocked the event loop",
            plugin=hook.plugin_name,
            hook=hook.hook_name,
            hook_event=hook.event_name,
            blocked_ms=round((elapsed_s or 0.0) * 1000.0, 1),
        )
    else:
        logger.warning(
            "hook failed",
            plugin=hook.plugin_name,
            hook=hook.hook_name,
            hook_event=hook.event_name,
            error=stats.last_error,
        )
    if stats.breaker.failure(breaker.now()):
        log = logger.error if hook.fail_closed else logger.warning
        log(
            "hook circuit breaker opened",
            plugin=hook.plugin_name,
            hook=hook.hook_name,
            hook_event=hook.event_name,
            consecutive_failures=stats.breaker.consecutive,
            cooldown_s=BREAKER_COOLDOWN_S,
            fail_closed=hook.fail_closed,
        )


def _breaker_open(hook: RegisteredHook) -> bool:
    if hook.stats.breaker.allows(breaker.now()):
        return False
    hook.stats.skipped += 1
    return True


def _outer_cancel_requested() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _first_step(hook: RegisteredHook, ctx: HookContext, threshold_s: float) -> tuple[int, Any, Any, float]:
    """Run a hook up to its first suspension: (outcome, value or yielded future, coroutine if suspended, start)."""
    hook.stats.calls += 1
    start = _perf()
    try:
        coro = hook.callback(ctx)
        yielded = coro.send(None)
    except StopIteration as stop:
        elapsed = _perf() - start
        if elapsed > threshold_s:
            _record_failure(hook, _HookBlockedLoopError(f"ran {elapsed * 1000:.0f} ms without yielding"), elapsed)
            return _FAILED, None, None, start
        _record_success(hook, elapsed)
        return _OK, stop.value, None, start
    except BaseException as exc:  # the hook's own failure, whatever its type
        _record_failure(hook, exc, _perf() - start)
        return _FAILED, None, None, start
    return _SUSPENDED, yielded, coro, start


async def _call(hook: RegisteredHook, ctx: HookContext, threshold_s: float) -> tuple[int, Any]:
    """Run one hook with timeout and isolation; returns (outcome, value)."""
    if hook.stats.breaker.open_until and _breaker_open(hook):
        return _SKIPPED, None
    outcome, value, coro, start = _first_step(hook, ctx, threshold_s)
    if coro is None:
        return outcome, value
    return await _continue(hook, coro, value, start, threshold_s)


async def _continue(hook: RegisteredHook, coro: Any, yielded: Any, start: float, threshold_s: float) -> tuple[int, Any]:
    """The rest of a hook that suspended: bounded by what remains of its timeout."""
    max_step = [_perf() - start]
    remaining = hook.timeout_s - max_step[0]
    timeout = asyncio.timeout(remaining if remaining > 0 else 0)
    try:
        async with timeout:
            value = await _resume(coro, yielded, max_step)
    except asyncio.CancelledError as exc:
        if _outer_cancel_requested():
            raise
        _record_failure(hook, exc, _perf() - start)
        return _FAILED, None
    except TimeoutError as exc:
        _record_failure(hook, exc, _perf() - start, timed_out=timeout.expired())
        return _FAILED, None
    except BaseException as exc:
        _record_failure(hook, exc, _perf() - start)
        return _FAILED, None
    elapsed = _perf() - start
    if max_step[0] > threshold_s:
        _record_failure(hook, _HookBlockedLoopError(f"ran {max_step[0] * 1000:.0f} ms without yielding"), elapsed)
        return _FAILED, None
    _record_success(hook, elapsed)
    return _OK, value


def _bind(ctx: HookContext, hook: RegisteredHook) -> None:
    ctx.plugin_name = hook.plugin_name
    ctx.hook_name = hook.hook_name
    ctx.settings = hook.settings
    ctx.logger = hook.logger


def _note_monitored(hook: RegisteredHook, effect: str, **details: Any) -> None:
    hook.stats.monitored_effects += 1
    logger.info(
        "monitor mode discarded hook effect",
        plugin=hook.plugin_name,
        hook=hook.hook_name,
        hook_event=hook.event_name,
        effect=effect,
        **details,
    )


def _enter(event_name: str) -> Any:
    depth = _emit_depth.get()
    if depth >= MAX_EMIT_DEPTH:
        logger.warning("nested hook emission dropped", hook_event=event_name, depth=depth + 1, limit=MAX_EMIT_DEPTH)
        return None
    return _emit_depth.set(depth + 1)


async def emit(registry: HookRegistry, event_name: str, ctx: HookContext) -> None:
    """Observer mode: hooks run one after another; a failure loses only that hook's effects."""
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return
    token = _enter(event_name)
    if token is None:
        return
    threshold_s = registry.blocking_threshold_ms / 1000.0
    snapshot = type(ctx).SNAPSHOT
    try:
        for hook in hooks:
            if hook.stats.breaker.open_until and _breaker_open(hook):
                continue
            ctx.plugin_name = hook.plugin_name
            ctx.hook_name = hook.hook_name
            ctx.settings = hook.settings
            ctx.logger = hook.logger
            before = snapshot(ctx) if snapshot is not None else None
            outcome, value, coro, start = _first_step(hook, ctx, threshold_s)
            if coro is not None:
                outcome, value = await _continue(hook, coro, value, start, threshold_s)
            if snapshot is None:
                continue
            if outcome == _OK:
                if hook.monitor and snapshot(ctx) != before:
                    changed = {name: getattr(ctx, name) for name in ctx.MUTABLE_FIELDS}
                    _note_monitored(hook, "mutation", fields=changed)
                    ctx.restore_mutable(before)
            else:
                ctx.restore_mutable(before)
    finally:
        _emit_depth.reset(token)


def _items_from(result: Any) -> list[EnrichmentItem]:
    if result is None:
        return []
    if isinstance(result, EnrichmentItem):
        return [result]
    if isinstance(result, Iterable) and not isinstance(result, str | bytes | dict):
        items = list(result)
        if all(isinstance(item, EnrichmentItem) for item in items):
            return items
    raise _InvalidHookResultError(f"expected EnrichmentItem, a list of them, or None; got {type(result).__name__}")


def _collect_one(
    hook: RegisteredHook, hook_ctx: MessageEnrichContext, outcome: int, value: Any
) -> list[EnrichmentItem]:
    if outcome != _OK:
        return []
    try:
        items = [*hook_ctx.items, *_items_from(value)]
    except _InvalidHookResultError as exc:
        _record_failure(hook, exc, None)
        return []
    if hook.monitor and items:
        _note_monitored(hook, "items", keys=[item.key for item in items])
        return []
    return items


async def emit_collect(registry: HookRegistry, event_name: str, ctx: MessageEnrichContext) -> list[EnrichmentItem]:
    """Collector mode: hooks run concurrently (at most 10 at once), each on its own copy of the context.

    A failing hook loses only its own items; the rest merge in hook order.
    """
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return []
    token = _enter(event_name)
    if token is None:
        return []
    threshold_s = registry.blocking_threshold_ms / 1000.0
    results: list[list[EnrichmentItem]] = [[] for _ in hooks]
    running: set[asyncio.Task[None]] = set()

    async def finish(
        index: int, hook: RegisteredHook, hook_ctx: MessageEnrichContext, coro: Any, yielded: Any, start: float
    ) -> None:
        outcome, value = await _continue(hook, coro, yielded, start, threshold_s)
        results[index] = _collect_one(hook, hook_ctx, outcome, value)

    try:
        for index, hook in enumerate(hooks):
            if hook.stats.breaker.open_until and _breaker_open(hook):
                continue
            if len(running) >= COLLECTOR_CONCURRENCY:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                running.difference_update(done)
            hook_ctx = ctx.clone()
            assert isinstance(hook_ctx, MessageEnrichContext)
            hook_ctx.items = []
            _bind(hook_ctx, hook)
            outcome, value, coro, start = _first_step(hook, hook_ctx, threshold_s)
            if coro is None:
                results[index] = _collect_one(hook, hook_ctx, outcome, value)
                continue
            running.add(asyncio.ensure_future(finish(index, hook, hook_ctx, coro, value, start)))
        if running:
            await asyncio.wait(running)
            running.clear()
    finally:
        if running:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        _emit_depth.reset(token)
    merged = [item for items in results for item in items]
    ctx.items = merged
    return merged


async def emit_transform(registry: HookRegistry, event_name: str, ctx: BeforeResponseContext) -> ResponseDraft:
    """Transformer mode: hooks run in order on the draft; a failing hook's changes are discarded."""
    draft = ctx.draft
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return draft
    token = _enter(event_name)
    if token is None:
        return draft
    threshold_s = registry.blocking_threshold_ms / 1000.0
    try:
        for hook in hooks:
            _bind(ctx, hook)
            working = draft.copy()
            ctx.draft = working
            outcome, value = await _call(hook, ctx, threshold_s)
            if outcome != _OK:
                continue
            if value is not None and not isinstance(value, ResponseDraft):
                invalid = _InvalidHookResultError(f"returned {type(value).__name__}, expected ResponseDraft or None")
                _record_failure(hook, invalid, None)
                continue
            candidate = value if value is not None else ctx.draft
            if not isinstance(candidate, ResponseDraft):
                continue
            if hook.monitor:
                if candidate.response_text != draft.response_text or candidate.suppress != draft.suppress:
                    _note_monitored(
                        hook,
                        "draft",
                        suppress=candidate.suppress,
                        text_changed=candidate.response_text != draft.response_text,
                    )
                continue
            draft = candidate
    finally:
        ctx.draft = draft
        _emit_depth.reset(token)
    return draft


async def emit_gate(registry: HookRegistry, event_name: str, ctx: ToolBeforeCallContext) -> ToolBeforeCallContext:
    """Gate mode: hooks run in order; the first `decline()` stops the chain.

    A failing gate fails open, unless it is fail-closed: then the call is declined, and stays
    declined while that hook's circuit breaker is open.
    """
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return ctx
    token = _enter(event_name)
    if token is None:
        return ctx
    threshold_s = registry.blocking_threshold_ms / 1000.0
    try:
        for hook in hooks:
            _bind(ctx, hook)
            before = (ctx.declined, ctx.decline_reason)
            outcome, _ = await _call(hook, ctx, threshold_s)
            if outcome != _OK:
                ctx.declined, ctx.decline_reason = before
                if hook.fail_closed and not hook.monitor:
                    state = "circuit open" if outcome == _SKIPPED else "failed"
                    ctx.decline(f"Tool call blocked: safety check {hook.plugin_name}:{hook.hook_name} {state}.")
                    hook.stats.declines += 1
                    break
                continue
            if ctx.declined:
                if hook.monitor:
                    _note_monitored(hook, "decline", reason=ctx.decline_reason)
                    ctx.declined, ctx.decline_reason = before
                    continue
                hook.stats.declines += 1
                break
    finally:
        _emit_depth.reset(token)
    return ctx
