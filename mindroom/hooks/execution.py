"""Running hooks: one function per execution mode, each hook isolated at the plugin boundary.

Every hook runs from its first step to its end in one task, in its own copy of the emitter's
context: anyio cancel scopes (httpx), `ContextVar.set()`/`reset()` pairs and the hook's own
`asyncio.timeout()` work inside it, and its context changes stay with it. Serial modes run hooks in
the caller's task. A collector does too until a hook awaits; only then does it start a task for the
next hook, so hooks that never wait (the common case) cost no task at all.

A hook fails when it raises (anything, `SystemExit` and `KeyboardInterrupt` included) or when it
ends after its timeout. A step that blocks the event loop longer than the registry's threshold is
reported; it counts as a failure only past the timeout. The caller's cancellation always propagates,
and a hook that goes on after a cancellation that is not its own is cut off. One call is
`invocation.call_hook`; this module decides what each mode does with its outcome.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from contextvars import ContextVar, Token
from typing import Any

from mindroom.hooks.breaker import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD
from mindroom.hooks.context import BeforeResponseContext, MessageEnrichContext, ResponseDraft, ToolBeforeCallContext
from mindroom.hooks.enrichment import EnrichmentItem
from mindroom.hooks.hook_context import HookContext
from mindroom.hooks.invocation import OK, SKIPPED, Outcome, call_hook, record_failure
from mindroom.hooks.registry import HookRegistry, RegisteredHook
from mindroom.logging_config import get_logger

__all__ = [
    "BREAKER_COOLDOWN_S",
    "BREAKER_THRESHOLD",
    "COLLECTOR_CONCURRENCY",
    "MAX_EMIT_DEPTH",
    "Outcome",
    "emit",
    "emit_collect",
    "emit_gate",
    "emit_transform",
]

logger = get_logger(__name__)

COLLECTOR_CONCURRENCY = 10
MAX_EMIT_DEPTH = 3
# Python 3.12+ starts a collector's extra task eagerly: its hook's first step runs at once.
_EAGER_TASKS = sys.version_info >= (3, 12)

_emit_depth: ContextVar[int] = ContextVar("mindroom_hook_emit_depth", default=0)


class _InvalidHookResultError(Exception):
    """A hook returned something its mode cannot use."""


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


def _scope(
    registry: HookRegistry, event_name: str, ctx: HookContext
) -> tuple[tuple[RegisteredHook, ...], Token[int]] | None:
    """The prologue of every emit: the hooks that fire here, and the nesting token; None when none run."""
    agent_name, room_id = ctx.hook_scope()
    hooks = registry.matching(event_name, agent_name, room_id)
    if not hooks:
        return None
    depth = _emit_depth.get()
    if depth >= MAX_EMIT_DEPTH:
        logger.warning("nested hook emission dropped", hook_event=event_name, depth=depth + 1, limit=MAX_EMIT_DEPTH)
        return None
    return hooks, _emit_depth.set(depth + 1)


async def emit(registry: HookRegistry, event_name: str, ctx: HookContext) -> None:
    """Observer mode: hooks run one after another; a failure loses only that hook's effects."""
    scope = _scope(registry, event_name, ctx)
    if scope is None:
        return
    hooks, token = scope
    threshold_s = registry.blocking_threshold_ms / 1000.0
    frozen = type(ctx).FROZEN
    snapshot = type(ctx).SNAPSHOT
    try:
        for hook in hooks:
            _bind(ctx, hook)
            if frozen:  # each hook reads its own copy, so nothing it writes reaches anyone else
                await call_hook(hook, ctx.hook_copy(), threshold_s)
                continue
            if snapshot is None:
                await call_hook(hook, ctx, threshold_s)
                continue
            before = snapshot(ctx)
            outcome, _ = await call_hook(hook, ctx, threshold_s)
            if outcome is not OK:
                ctx.restore_mutable(before)
            elif hook.monitor and snapshot(ctx) != before:
                _note_monitored(hook, "mutation", fields={name: getattr(ctx, name) for name in ctx.MUTABLE_FIELDS})
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


def _collected(hook: RegisteredHook, hook_ctx: MessageEnrichContext, outcome: int, value: Any) -> list[EnrichmentItem]:
    if outcome != OK:
        return []
    try:
        items = [*hook_ctx.items, *_items_from(value)]
    except _InvalidHookResultError as exc:
        record_failure(hook, exc, None)
        return []
    if hook.monitor and items:
        _note_monitored(hook, "items", keys=[item.key for item in items])
        return []
    return items


class _Collection:
    """One collector emission: hooks start in order, each on its own copy of the context.

    The caller's task runs hooks until one awaits; then a new task takes the next hook, and so on, never
    more than `COLLECTOR_CONCURRENCY` at once. Whichever task starts a hook runs it to its end.

    Why not a task per hook: with 20 hooks that never await, this costs 2.3 us per hook against 7.6 us
    for a plain task each (Python 3.11, min of 7 rounds on a shared 2-core machine), and the spec's
    5 us budget rules the latter out. What it costs: a hook that awaits hands the next hook to a new
    task, which starts one loop iteration later (on 3.12+ at once, eagerly); 10 hooks sleeping 100 ms
    still finish in 101 ms.
    """

    __slots__ = ("ctx", "extra", "hooks", "next", "results", "threshold_s", "workers")

    def __init__(self, hooks: tuple[RegisteredHook, ...], ctx: MessageEnrichContext, threshold_s: float) -> None:
        self.hooks = hooks
        self.ctx = ctx
        self.threshold_s = threshold_s
        self.results: list[list[EnrichmentItem]] = [[] for _ in hooks]
        self.next = 0
        self.extra = 0  # tasks started besides the caller's that are still running hooks
        self.workers: list[asyncio.Task[None]] = []

    async def run(self) -> list[list[EnrichmentItem]]:
        """Run every hook; returns each hook's items in hook order."""
        try:
            await self._work()
            if self.workers:
                while pending := [task for task in self.workers if not task.done()]:
                    await asyncio.wait(pending)
                for task in self.workers:
                    task.result()  # an error of the host itself is not contained
        finally:
            if running := [task for task in self.workers if not task.done()]:
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)
        return self.results

    async def _work(self) -> None:
        hooks = self.hooks
        while self.next < len(hooks):
            index = self.next
            self.next += 1
            hook = hooks[index]
            hook_ctx = self.ctx.clone()
            assert isinstance(hook_ctx, MessageEnrichContext)
            hook_ctx.items = []
            _bind(hook_ctx, hook)
            outcome, value = await call_hook(hook, hook_ctx, self.threshold_s, self._hook_waits)
            self.results[index] = _collected(hook, hook_ctx, outcome, value)

    async def _extra_worker(self) -> None:
        try:
            await self._work()
        finally:
            self.extra -= 1

    def _hook_waits(self) -> None:
        """A hook reached an await: let a new task start the next hook, within the concurrency bound."""
        if self.next >= len(self.hooks) or self.extra + 1 >= COLLECTOR_CONCURRENCY:
            return
        self.extra += 1
        loop = asyncio.get_running_loop()
        if _EAGER_TASKS:
            task = asyncio.Task(self._extra_worker(), loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
        else:
            task = loop.create_task(self._extra_worker())
        self.workers.append(task)


async def emit_collect(registry: HookRegistry, event_name: str, ctx: MessageEnrichContext) -> list[EnrichmentItem]:
    """Collector mode: hooks run concurrently (at most 10 at once), each on its own copy of the context.

    A failing hook loses only its own items; the rest merge in hook order.
    """
    scope = _scope(registry, event_name, ctx)
    if scope is None:
        return []
    hooks, token = scope
    try:
        results = await _Collection(hooks, ctx, registry.blocking_threshold_ms / 1000.0).run()
    finally:
        _emit_depth.reset(token)
    merged = [item for items in results for item in items]
    ctx.items = merged
    return merged


async def emit_transform(registry: HookRegistry, event_name: str, ctx: BeforeResponseContext) -> ResponseDraft:
    """Transformer mode: hooks run in order on the draft; a failing hook's changes are discarded."""
    draft = ctx.draft
    scope = _scope(registry, event_name, ctx)
    if scope is None:
        return draft
    hooks, token = scope
    threshold_s = registry.blocking_threshold_ms / 1000.0
    try:
        for hook in hooks:
            _bind(ctx, hook)
            ctx.draft = draft.copy()
            outcome, value = await call_hook(hook, ctx, threshold_s)
            if outcome is not OK:
                continue
            if value is not None and not isinstance(value, ResponseDraft):
                invalid = _InvalidHookResultError(f"returned {type(value).__name__}, expected ResponseDraft or None")
                record_failure(hook, invalid, None)
                continue
            candidate = value if value is not None else ctx.draft
            if not isinstance(candidate, ResponseDraft):
                continue
            if hook.monitor:
                text_changed = candidate.response_text != draft.response_text
                if text_changed or candidate.suppress != draft.suppress:
                    _note_monitored(hook, "draft", suppress=candidate.suppress, text_changed=text_changed)
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
    scope = _scope(registry, event_name, ctx)
    if scope is None:
        return ctx
    hooks, token = scope
    threshold_s = registry.blocking_threshold_ms / 1000.0
    try:
        for hook in hooks:
            _bind(ctx, hook)
            before = (ctx.declined, ctx.decline_reason)
            outcome, _ = await call_hook(hook, ctx, threshold_s)
            if outcome is not OK:
                ctx.declined, ctx.decline_reason = before
                if hook.fail_closed and not hook.monitor:
                    state = "circuit open" if outcome is SKIPPED else "failed"
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
