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

The 2026 API's events run in these modes too: `system:enrich` and `tool:environment` are collectors
(`collector.py`), `message:final_response_transform` a copy-on-write transformer (`final_transform.py`).
"""

from __future__ import annotations

from typing import Any

from mindroom.hooks.breaker import BREAKER_COOLDOWN_S, BREAKER_THRESHOLD
from mindroom.hooks.collector import COLLECTOR_CONCURRENCY, collect_items, emit_system_enrich, emit_tool_environment
from mindroom.hooks.context import BeforeResponseContext, MessageEnrichContext, ResponseDraft, ToolBeforeCallContext
from mindroom.hooks.emission import MAX_EMIT_DEPTH, note_monitored, open_emission
from mindroom.hooks.enrichment import EnrichmentItem
from mindroom.hooks.final_transform import emit_final_transform
from mindroom.hooks.hook_context import HookContextBase
from mindroom.hooks.invocation import OK, SKIPPED, Outcome, call_hook
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.transform import transform_draft
from mindroom.logging_config import get_logger

__all__ = [
    "BREAKER_COOLDOWN_S",
    "BREAKER_THRESHOLD",
    "COLLECTOR_CONCURRENCY",
    "MAX_EMIT_DEPTH",
    "Outcome",
    "emit",
    "emit_collect",
    "emit_final_transform",
    "emit_gate",
    "emit_system_enrich",
    "emit_tool_environment",
    "emit_transform",
]

logger = get_logger(__name__)


async def emit(registry: HookRegistry, event_name: str, ctx: HookContextBase) -> None:
    """Observer mode: hooks run one after another; a failure loses only that hook's effects.

    A `background=True` hook is queued with a copy of the context (`BackgroundObservers`), not awaited.

    A failing `required=True` hook (only on `agent:started`) raises `RuntimeError` out of the emission,
    and the hooks after it do not run.
    """
    emission = open_emission(registry, event_name, ctx)
    if emission is None:
        return
    threshold_s = emission.threshold_s
    frozen = type(ctx).FROZEN
    snapshot = type(ctx).SNAPSHOT
    try:
        for hook in emission.hooks:
            if hook.background:  # the pipeline goes on; the hook gets its own copy, read when its turn comes
                view = ctx.hook_copy()
                if view is not None:
                    emission.bind(view, hook)
                    registry.background.submit(hook, view, threshold_s, call_hook)
                continue
            emission.bind(ctx, hook)
            if frozen:  # each hook reads its own copy, so nothing it writes reaches anyone else
                view = ctx.hook_copy()
                if view is None:
                    logger.warning("hook emission skipped: its context cannot be copied", hook_event=event_name)
                    break
                outcome, _ = await call_hook(hook, view, threshold_s)
            elif snapshot is None:
                outcome, _ = await call_hook(hook, ctx, threshold_s)
            else:
                before = snapshot(ctx)
                outcome, _ = await call_hook(hook, ctx, threshold_s)
                if outcome is not OK:
                    ctx.restore_mutable(before)
                elif hook.monitor and snapshot(ctx) != before:
                    fields = {name: getattr(ctx, name) for name in ctx.MUTABLE_FIELDS}
                    note_monitored(hook, "mutation", fields=fields)
                    ctx.restore_mutable(before)
            if outcome is not OK and hook.required and not hook.monitor:
                raise RuntimeError(f"Required startup hook {hook.plugin_name}:{hook.hook_name} failed")
    finally:
        emission.close()


async def emit_collect(registry: HookRegistry, event_name: str, ctx: MessageEnrichContext) -> list[EnrichmentItem]:
    """Collector mode: hooks run concurrently (at most 10 at once), each on its own copy of the context.

    A failing hook loses only its own items; the rest merge in hook order.
    """
    return await collect_items(registry, event_name, ctx)


def _draft_change(old: ResponseDraft, new: ResponseDraft) -> tuple[str, dict[str, Any]] | None:
    text_changed = new.response_text != old.response_text
    if text_changed or new.suppress != old.suppress:
        return "draft", {"suppress": new.suppress, "text_changed": text_changed}
    return None


async def emit_transform(registry: HookRegistry, event_name: str, ctx: BeforeResponseContext) -> ResponseDraft:
    """Transformer mode: hooks run in order on the draft; a failing hook's changes are discarded."""
    return await transform_draft(registry, event_name, ctx, ResponseDraft, _draft_change)


async def emit_gate(registry: HookRegistry, event_name: str, ctx: ToolBeforeCallContext) -> ToolBeforeCallContext:
    """Gate mode: hooks run in order; the first `decline()` stops the chain.

    A failing gate fails open, unless it is fail-closed: then the call is declined, and stays
    declined while that hook's circuit breaker is open.
    """
    emission = open_emission(registry, event_name, ctx)
    if emission is None:
        return ctx
    try:
        for hook in emission.hooks:
            emission.bind(ctx, hook)
            before = (ctx.declined, ctx.decline_reason)
            outcome, _ = await call_hook(hook, ctx, emission.threshold_s)
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
                    note_monitored(hook, "decline", reason=ctx.decline_reason)
                    ctx.declined, ctx.decline_reason = before
                    continue
                hook.stats.declines += 1
                break
    finally:
        emission.close()
    return ctx
