"""The spec's Testing section, verbatim: plugin authors' tests written this way must pass."""

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    HookRegistry,
    MessageReceivedContext,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect, emit_transform
from tests.hooks.support import stub_plugin


@hook(EVENT_MESSAGE_RECEIVED)
async def suppress_spam(ctx):
    if "spam" in ctx.envelope.body:
        ctx.suppress = True


@pytest.mark.asyncio
async def test_suppress_spam(hook_context_factory):
    registry = HookRegistry.from_plugins([stub_plugin("demo", [suppress_spam])])
    ctx = hook_context_factory(MessageReceivedContext, body="buy spam now")
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
    assert ctx.suppress is True


@hook(EVENT_MESSAGE_ENRICH)
async def enrich_with_time(ctx):
    ctx.add_metadata("time", "2026-03-23T10:00:00Z")


@pytest.mark.asyncio
async def test_enrichment(hook_context_factory):
    registry = HookRegistry.from_plugins([stub_plugin("demo", [enrich_with_time])])
    ctx = hook_context_factory("MessageEnrichContext")
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, ctx)
    assert len(items) == 1
    assert items[0].key == "time"


@hook(EVENT_MESSAGE_BEFORE_RESPONSE)
async def append_footer(ctx):
    ctx.draft.response_text += "\n-- Footer"


@pytest.mark.asyncio
async def test_append_footer(hook_context_factory):
    registry = HookRegistry.from_plugins([stub_plugin("demo", [append_footer])])
    ctx = hook_context_factory("BeforeResponseContext", response_text="Hello")
    result = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)
    assert result.response_text == "Hello\n-- Footer"
