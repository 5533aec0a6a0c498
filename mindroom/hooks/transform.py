"""Transformer mode's one loop, for `message:before_response` and `message:final_response_transform`.

Hooks run one after another, copy-on-write: each gets a copy of the current draft in `ctx.draft`, and
its copy (or a draft it returns) becomes current only if the hook succeeds. A failing hook's edits are
discarded; a monitor-mode hook's would-be change is logged and discarded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mindroom.hooks.emission import InvalidHookResultError, note_monitored, open_emission
from mindroom.hooks.invocation import OK, call_hook, record_failure
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.response_contexts import FinalResponseDraft
from mindroom.hooks.transport import ResponseDraft

__all__ = ["DraftChange", "transform_draft"]

_DraftT = TypeVar("_DraftT", ResponseDraft, FinalResponseDraft)
DraftChange = Callable[[_DraftT, _DraftT], tuple[str, dict[str, Any]] | None]
"""What a monitor-mode hook would have changed from the first draft to the second (effect, log fields), or None."""


async def transform_draft(
    registry: HookRegistry, event_name: str, ctx: Any, draft_type: type[_DraftT], change: DraftChange[_DraftT]
) -> _DraftT:
    """Run `event_name`'s hooks on `ctx.draft` in order; returns the final draft (also left in `ctx.draft`)."""
    draft: _DraftT = ctx.draft
    emission = open_emission(registry, event_name, ctx)
    if emission is None:
        return draft
    try:
        for hook in emission.hooks:
            emission.bind(ctx, hook)
            ctx.draft = draft.copy()
            outcome, value = await call_hook(hook, ctx, emission.threshold_s)
            if outcome is not OK:
                continue
            if value is not None and not isinstance(value, draft_type):
                expected = draft_type.__name__
                invalid = InvalidHookResultError(f"returned {type(value).__name__}, expected {expected} or None")
                record_failure(hook, invalid, None)
                continue
            candidate = value if value is not None else ctx.draft
            if not isinstance(candidate, draft_type):
                continue  # the hook put something else in `ctx.draft`: nothing usable to pass on
            if hook.monitor:
                would = change(draft, candidate)
                if would is not None:
                    note_monitored(hook, would[0], **would[1])
                continue
            draft = candidate
    finally:
        ctx.draft = draft
        emission.close()
    return draft
