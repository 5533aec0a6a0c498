"""`emit_model_gate`: the `model:before_call` gate, whose hooks may also rewrite the request they let through.

It follows the gate rules of `tool:before_call`: hooks run in order and the first `decline()` stops the chain;
a failing hook's changes (its rewrite and its decline) are discarded and the call goes on (fail-open), unless the
hook is fail-closed: then the call is refused, and stays refused while that hook's circuit breaker is open.
A monitor-mode hook's rewrite or decline is counted and logged, never applied. A hook that leaves messages or
parameters the request cannot carry has failed: its changes are discarded like those of a hook that raised.
"""

from __future__ import annotations

from typing import Any

from mindroom.hooks.emission import InvalidHookResultError, note_monitored, open_emission
from mindroom.hooks.invocation import FAILED, OK, SKIPPED, call_hook, record_failure
from mindroom.hooks.model_contexts import ModelBeforeCallContext
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.types import EVENT_MODEL_BEFORE_CALL

__all__ = ["emit_model_gate"]

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _shape_problem(ctx: ModelBeforeCallContext) -> str | None:
    """Why the request a hook left cannot be sent, or None."""
    messages: Any = ctx.messages
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            return f"messages[{index}] must be a dict whose role is one of {', '.join(sorted(_ROLES))}"
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            return f"messages[{index}].content must be text, a list of parts, or None"
    params: Any = ctx.params
    if not isinstance(params, dict) or not isinstance(params.get("tools"), list | None):
        return "params must be a dict whose tools is a list or None"
    return None


async def emit_model_gate(registry: HookRegistry, ctx: ModelBeforeCallContext) -> ModelBeforeCallContext:
    """Run the `model:before_call` hooks on `ctx`; returns it with the request to send, or declined."""
    emission = open_emission(registry, EVENT_MODEL_BEFORE_CALL, ctx)
    if emission is None:
        return ctx
    try:
        for hook in emission.hooks:
            emission.bind(ctx, hook)
            before = ctx.snapshot_mutable()  # deep copies: hooks edit the messages in place
            outcome, _ = await call_hook(hook, ctx, emission.threshold_s)
            if outcome is OK and (problem := _shape_problem(ctx)) is not None:
                record_failure(hook, InvalidHookResultError(problem), None)
                outcome = FAILED
            if outcome is not OK:
                ctx.restore_mutable(before)
                if hook.fail_closed and not hook.monitor:
                    state = "circuit open" if outcome is SKIPPED else "failed"
                    ctx.decline(f"Model call blocked: safety check {hook.plugin_name}:{hook.hook_name} {state}.")
                    hook.stats.declines += 1
                    break
                continue
            if hook.monitor:
                if ctx.snapshot_mutable() != before:
                    effect = "decline" if ctx.declined and not before[2] else "rewrite"
                    note_monitored(hook, effect, reason=ctx.decline_reason if effect == "decline" else None)
                    ctx.restore_mutable(before)
                continue
            if ctx.declined:
                hook.stats.declines += 1
                break
    finally:
        emission.close()
    return ctx
