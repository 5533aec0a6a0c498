"""`message:final_response_transform`: hooks may rewrite the text of a streamed answer's last edit.

Hooks run one after another, copy-on-write: each gets a copy of the current draft, and its copy (or a
`FinalResponseDraft` it returns) becomes current only if the hook succeeds. A hook that fails, times
out or is cancelled from inside is skipped and the chain goes on; the caller's own cancellation still
propagates. Only `response_text` is read back, and it is used only if it is not blank and differs from
the streamed text. Should the transform itself fail, the streamed text is kept.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.response_contexts import FinalResponseDraft, FinalResponseTransformContext
from mindroom.hooks.transform import transform_draft
from mindroom.hooks.types import EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM
from mindroom.logging_config import get_logger

__all__ = ["emit_final_transform"]

logger = get_logger("mindroom.hooks.execution")


def _text_change(old: FinalResponseDraft, new: FinalResponseDraft) -> tuple[str, dict[str, Any]] | None:
    return ("final text", {"text_changed": True}) if new.response_text != old.response_text else None


async def _transform(registry: HookRegistry, ctx: FinalResponseTransformContext) -> FinalResponseDraft:
    return await transform_draft(
        registry, EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM, ctx, FinalResponseDraft, _text_change
    )


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
