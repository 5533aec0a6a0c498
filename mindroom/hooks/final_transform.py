"""`message:final_response_transform`: hooks may rewrite the text of a streamed answer's last edit.

Hooks run one after another, copy-on-write: each gets a copy of the current draft, and its copy (or a
`FinalResponseDraft` it returns) becomes current only if the hook succeeds. A hook that fails, times
out or is cancelled from inside is skipped and the chain goes on; the caller's own cancellation still
propagates. Only `response_text` is read back, and it is used only if it is not blank and differs from
the streamed text. Should the transform itself fail, the streamed text is kept.
"""

from __future__ import annotations

import asyncio

from mindroom.hooks.emission import InvalidHookResultError, bind_hook, emission_scope, end_emission, note_monitored
from mindroom.hooks.invocation import OK, call_hook, record_failure
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.response_contexts import FinalResponseDraft, FinalResponseTransformContext
from mindroom.hooks.types import EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM
from mindroom.logging_config import get_logger

__all__ = ["emit_final_transform"]

logger = get_logger("mindroom.hooks.execution")


async def _transform(registry: HookRegistry, ctx: FinalResponseTransformContext) -> FinalResponseDraft:
    draft = ctx.draft
    scope = emission_scope(registry, EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM, ctx)
    if scope is None:
        return draft
    hooks, token = scope
    threshold_s = registry.blocking_threshold_ms / 1000.0
    generation = registry.generation
    try:
        for hook in hooks:
            bind_hook(ctx, hook, generation)
            ctx.draft = draft.copy()
            outcome, value = await call_hook(hook, ctx, threshold_s)
            if outcome is not OK:
                continue
            if value is not None and not isinstance(value, FinalResponseDraft):
                invalid = InvalidHookResultError(
                    f"returned {type(value).__name__}, expected FinalResponseDraft or None"
                )
                record_failure(hook, invalid, None)
                continue
            candidate = value if value is not None else ctx.draft
            if not isinstance(candidate, FinalResponseDraft):
                continue  # the hook put something else in `ctx.draft`: nothing usable to pass on
            if hook.monitor:
                if candidate.response_text != draft.response_text:
                    note_monitored(hook, "final text", text_changed=True)
                continue
            draft = candidate
    finally:
        ctx.draft = draft
        end_emission(token)
    return draft


async def emit_final_transform(registry: HookRegistry, ctx: FinalResponseTransformContext) -> str:
    """The text for a streamed answer's final edit: the hooks' text if usable, else the streamed text."""
    streamed = ctx.draft.response_text
    try:
        draft = await _transform(registry, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the engine's own failure: the streamed answer must still be finished
        logger.error("final response transform failed; the streamed text is kept", error=repr(exc))
        return streamed
    text = draft.response_text
    if isinstance(text, str) and text.strip() and text != streamed:
        return text
    return streamed
