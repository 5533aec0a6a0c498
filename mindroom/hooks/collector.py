"""Collector mode: hooks start in order, each on its own copy of the context, at most 10 at once.

Used by `message:enrich`, `system:enrich` and `tool:environment`; each says, through a `take` function,
what one hook contributed: its items, or its environment changes. A failing hook contributes nothing.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable
from typing import Any, Protocol, cast

from mindroom.hooks.emission import Emission, InvalidHookResultError, note_monitored, open_emission
from mindroom.hooks.enrichment import EnrichmentItem, without_runtime_keys
from mindroom.hooks.hook_context import HookContextBase
from mindroom.hooks.invocation import OK, Outcome, call_hook, record_failure
from mindroom.hooks.registry import HookRegistry, RegisteredHook
from mindroom.hooks.response_contexts import SystemEnrichContext
from mindroom.hooks.tool_contexts import (
    ToolEnvironment,
    ToolEnvironmentChanges,
    ToolEnvironmentContext,
    merge_tool_environment,
)
from mindroom.hooks.types import EVENT_SYSTEM_ENRICH, EVENT_TOOL_ENVIRONMENT

__all__ = [
    "COLLECTOR_CONCURRENCY",
    "CollectorContext",
    "Take",
    "collect",
    "collect_items",
    "emit_system_enrich",
    "emit_tool_environment",
]

COLLECTOR_CONCURRENCY = 10
# Python 3.12+ starts a collector's extra task eagerly: its hook's first step runs at once.
_EAGER_TASKS = sys.version_info >= (3, 12)


class CollectorContext(Protocol):
    """A context a collector can give each hook a fresh copy of."""

    def collector_copy(self) -> Any:
        """One hook's copy, with its own empty contribution."""


Take = Callable[[RegisteredHook, Any, Outcome, Any], Any]
"""`(hook, its context copy, outcome, returned value) -> its contribution`."""


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

    __slots__ = ("ctx", "emission", "extra", "hooks", "next", "results", "take", "workers")

    def __init__(self, emission: Emission, ctx: CollectorContext, take: Take) -> None:
        self.emission = emission
        self.hooks = emission.hooks
        self.ctx = ctx
        self.take = take
        self.results: list[Any] = [None] * len(self.hooks)
        self.next = 0
        self.extra = 0  # tasks started besides the caller's that are still running hooks
        self.workers: list[asyncio.Task[None]] = []

    async def run(self) -> list[Any]:
        """Run every hook; returns each hook's contribution in hook order."""
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
        hooks, emission = self.hooks, self.emission
        while self.next < len(hooks):
            index = self.next
            self.next += 1
            hook = hooks[index]
            hook_ctx = self.ctx.collector_copy()
            emission.bind(hook_ctx, hook)
            outcome, value = await call_hook(hook, hook_ctx, emission.threshold_s, self._hook_waits)
            self.results[index] = self.take(hook, hook_ctx, outcome, value)

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


async def collect(registry: HookRegistry, event_name: str, ctx: HookContextBase, take: Take) -> list[Any] | None:
    """Run an event's hooks as a collector; each hook's contribution (`take`) in hook order, None if none ran."""
    emission = open_emission(registry, event_name, ctx)
    if emission is None:
        return None
    try:
        return await _Collection(emission, cast(CollectorContext, ctx), take).run()
    finally:
        emission.close()


def _items_from(result: Any) -> list[EnrichmentItem]:
    if result is None:
        return []
    if isinstance(result, EnrichmentItem):
        return [result]
    if isinstance(result, Iterable) and not isinstance(result, str | bytes | dict):
        items = list(result)
        if all(isinstance(item, EnrichmentItem) for item in items):
            return items
    raise InvalidHookResultError(f"expected EnrichmentItem, a list of them, or None; got {type(result).__name__}")


def _take_items(hook: RegisteredHook, hook_ctx: Any, outcome: Outcome, value: Any) -> list[EnrichmentItem]:
    if outcome is not OK:
        return []
    added: list[EnrichmentItem] = hook_ctx.items
    try:
        items = [*added, *_items_from(value)]
    except InvalidHookResultError as exc:
        if not getattr(type(hook_ctx), "IGNORES_INVALID_RESULT", False):
            record_failure(hook, exc, None)
            return []
        items = list(added)  # `system:enrich` ignores what else a hook returns
    if hook.monitor and items:
        note_monitored(hook, "items", keys=[item.key for item in items])
        return []
    return items


async def collect_items(registry: HookRegistry, event_name: str, ctx: HookContextBase) -> list[EnrichmentItem]:
    """Items of an enrichment event (`items` on the context), merged in hook order; also left in `ctx.items`."""
    results = await collect(registry, event_name, ctx, _take_items)
    if results is None:
        return []
    merged = [item for items in results for item in items]
    ctx.items = merged  # type: ignore[attr-defined]  # both enrichment contexts have `items`
    return merged


async def emit_system_enrich(registry: HookRegistry, ctx: SystemEnrichContext) -> list[EnrichmentItem]:
    """`system:enrich`: the items for the `<mindroom_system_context>` block, without runtime-owned keys.

    Render them with `render_system_context`; the block goes into this turn's system prompt only.
    """
    items = without_runtime_keys(await collect_items(registry, EVENT_SYSTEM_ENRICH, ctx))
    ctx.items = items
    return items


def _take_environment(
    hook: RegisteredHook, hook_ctx: Any, outcome: Outcome, value: Any
) -> ToolEnvironmentChanges | None:
    if outcome is not OK:
        return None
    changes: ToolEnvironmentChanges = hook_ctx.changes()
    if hook.monitor and (changes.env or changes.pass_through):
        note_monitored(hook, "environment", names=[name for name, _ in changes.env])
        return None
    return changes


async def emit_tool_environment(registry: HookRegistry, ctx: ToolEnvironmentContext) -> ToolEnvironment:
    """`tool:environment`: every hook's environment changes for one tool call, merged (return values ignored)."""
    results = await collect(registry, EVENT_TOOL_ENVIRONMENT, ctx, _take_environment)
    if results is None:
        return ToolEnvironment()
    return merge_tool_environment(changes for changes in results if changes is not None)
