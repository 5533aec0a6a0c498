"""`emit_transform` (transformer mode): serial hooks on a draft; a failing hook's changes are discarded."""

import asyncio
import dataclasses

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    BeforeResponseContext,
    HookRegistry,
    ResponseDraft,
    ToolTraceEntry,
    hook,
)
from mindroom.hooks.execution import emit_transform
from tests.hooks.support import registry_of


@pytest.mark.asyncio
async def test_emit_transform_applies_hooks_in_priority_order(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=20)
    async def redact(ctx):
        ctx.draft.response_text = ctx.draft.response_text.replace("sk-123", "[key]")

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=10)
    async def add_disclaimer(ctx):
        ctx.draft.response_text += "\n\n*Generated automatically.*"

    ctx = hook_context_factory(BeforeResponseContext, response_text="key sk-123")
    result = await emit_transform(registry_of(redact, add_disclaimer), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "key [key]\n\n*Generated automatically.*"
    assert ctx.draft is result


@pytest.mark.asyncio
async def test_emit_transform_in_place_edit_then_raise_is_discarded(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=1)
    async def good(ctx):
        ctx.draft.response_text += " +good"

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=2)
    async def edit_then_raise(ctx):
        ctx.draft.response_text = "corrupted"
        ctx.draft.suppress = True
        ctx.draft.extra_content["leak"] = True
        ctx.draft.tool_trace.append(ToolTraceEntry(tool_name="fake"))
        raise RuntimeError("boom")

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=3)
    async def sees_previous(ctx):
        ctx.draft.response_text += " +after"

    ctx = hook_context_factory(
        BeforeResponseContext,
        response_text="Hello",
        extra_content={"keep": 1},
        tool_trace=[ToolTraceEntry(tool_name="t")],
    )
    original = ctx.draft
    result = await emit_transform(registry_of(good, edit_then_raise, sees_previous), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "Hello +good +after"
    assert result.suppress is False
    assert result.extra_content == {"keep": 1}
    assert [entry.tool_name for entry in result.tool_trace] == ["t"]
    # The caller's draft object is not corrupted by the failing hook either.
    assert original.extra_content == {"keep": 1}


@pytest.mark.asyncio
async def test_emit_transform_returned_replacement_draft_is_adopted(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=1)
    async def replace(ctx):
        return dataclasses.replace(ctx.draft, response_text="replaced", response_kind="system")

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=2)
    async def after(ctx):
        ctx.draft.response_text += "!"

    ctx = hook_context_factory(BeforeResponseContext, response_text="original")
    result = await emit_transform(registry_of(replace, after), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "replaced!"
    assert result.response_kind == "system"


@pytest.mark.asyncio
async def test_emit_transform_assigned_draft_is_adopted(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def assign(ctx):
        ctx.draft = ResponseDraft("assigned", "ai", None, None, ctx.envelope)

    ctx = hook_context_factory(BeforeResponseContext, response_text="original")
    result = await emit_transform(registry_of(assign), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "assigned"


@pytest.mark.asyncio
async def test_emit_transform_returned_draft_then_raise_is_discarded(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def assign_then_raise(ctx):
        ctx.draft = ResponseDraft("assigned", "ai", None, None, ctx.envelope, suppress=True)
        raise RuntimeError("boom")

    ctx = hook_context_factory(BeforeResponseContext, response_text="original")
    result = await emit_transform(registry_of(assign_then_raise), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "original"
    assert result.suppress is False
    assert ctx.draft.response_text == "original"


@pytest.mark.asyncio
async def test_emit_transform_suppress_is_kept(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def silence(ctx):
        ctx.draft.suppress = True

    ctx = hook_context_factory(BeforeResponseContext, response_text="secret")
    result = await emit_transform(registry_of(silence), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.suppress is True


@pytest.mark.asyncio
async def test_emit_transform_timeout_discards_changes(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=1, timeout_ms=30)
    async def slow(ctx):
        ctx.draft.response_text = "partial"
        ctx.draft.suppress = True
        await asyncio.sleep(5)

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=2)
    async def after(ctx):
        ctx.draft.response_text += " ok"

    ctx = hook_context_factory(BeforeResponseContext, response_text="Hello")
    registry = registry_of(slow, after)
    result = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "Hello ok"
    assert result.suppress is False
    assert registry.hooks_for(EVENT_MESSAGE_BEFORE_RESPONSE)[0].stats.timeouts == 1


@pytest.mark.asyncio
async def test_emit_transform_default_timeout_is_200_ms(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def too_slow(ctx):
        ctx.draft.response_text = "late"
        await asyncio.sleep(0.4)

    registry = registry_of(too_slow)
    ctx = hook_context_factory(BeforeResponseContext, response_text="Hello")
    loop = asyncio.get_running_loop()
    start = loop.time()
    result = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert loop.time() - start > 0.15  # not before its timeout
    assert result.response_text == "Hello"  # cut off: the hook's change is discarded
    assert registry.hooks_for(EVENT_MESSAGE_BEFORE_RESPONSE)[0].timeout_ms == 200


@pytest.mark.asyncio
async def test_emit_transform_invalid_return_discards_changes(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def returns_text(ctx):
        ctx.draft.response_text = "edited"
        return "not a draft"

    ctx = hook_context_factory(BeforeResponseContext, response_text="Hello")
    registry = registry_of(returns_text)
    result = await emit_transform(registry, EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.response_text == "Hello"
    assert registry.hooks_for(EVENT_MESSAGE_BEFORE_RESPONSE)[0].stats.failures == 1


@pytest.mark.asyncio
async def test_emit_transform_without_hooks_returns_the_same_draft(hook_context_factory):
    ctx = hook_context_factory(BeforeResponseContext, response_text="Hello")
    draft = ctx.draft

    assert await emit_transform(HookRegistry.empty(), EVENT_MESSAGE_BEFORE_RESPONSE, ctx) is draft


@pytest.mark.asyncio
async def test_emit_transform_draft_keeps_envelope(hook_context_factory):
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def touch(ctx):
        ctx.draft.response_text += "."

    ctx = hook_context_factory(BeforeResponseContext, response_text="Hi", body="question", thread_id="$t")
    result = await emit_transform(registry_of(touch), EVENT_MESSAGE_BEFORE_RESPONSE, ctx)

    assert result.envelope.body == "question"
    assert result.envelope.thread_id == "$t"


@pytest.mark.asyncio
async def test_emit_transform_failing_hook_called_exactly_once(hook_context_factory):
    calls = []

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def broken(ctx):
        calls.append(1)
        raise RuntimeError("boom")

    await emit_transform(
        registry_of(broken), EVENT_MESSAGE_BEFORE_RESPONSE, hook_context_factory(BeforeResponseContext)
    )

    assert calls == [1]
