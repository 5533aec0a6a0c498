"""`message:final_response_transform`: serial, copy-on-write rewrites of a streamed answer's final text."""

import asyncio

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM,
    FinalResponseDraft,
    FinalResponseTransformContext,
    HookRegistry,
    MessageEnvelope,
    hook,
)
from mindroom.hooks.execution import emit_final_transform
from tests.hooks.support import registry_of

EVENT = EVENT_MESSAGE_FINAL_RESPONSE_TRANSFORM


ENVELOPE = MessageEnvelope(
    source_event_id="$e",
    room_id="!room:localhost",
    thread_id=None,
    resolved_thread_id="$e",
    requester_id="@alice:localhost",
    sender_id="@alice:localhost",
    body="hello",
    attachment_ids=(),
    mentioned_agents=(),
    agent_name="code",
    source_kind="message",
)


def streamed(text="The streamed answer."):
    return FinalResponseTransformContext(envelope=ENVELOPE, draft=FinalResponseDraft(text, "ai", ENVELOPE))


@pytest.mark.asyncio
async def test_final_transform_hooks_run_in_order_each_on_the_previous_result():
    @hook(EVENT, priority=2)
    async def second(ctx):
        ctx.draft.response_text += " [2]"

    @hook(EVENT, priority=1)
    async def first(ctx):
        await asyncio.sleep(0)
        ctx.draft.response_text += " [1]"

    assert await emit_final_transform(registry_of(second, first), streamed("A")) == "A [1] [2]"


@pytest.mark.asyncio
async def test_final_transform_each_hook_gets_a_copy_so_a_failure_discards_its_edits():
    drafts = []

    @hook(EVENT, priority=1)
    async def broken(ctx):
        drafts.append(ctx.draft)
        ctx.draft.response_text = "half-edited"
        raise RuntimeError("boom")

    @hook(EVENT, priority=2)
    async def fine(ctx):
        drafts.append(ctx.draft)
        ctx.draft.response_text += "!"

    ctx = streamed("A")
    original = ctx.draft

    assert await emit_final_transform(registry_of(broken, fine), ctx) == "A!"
    assert drafts[0] is not original and drafts[1] is not drafts[0]
    assert original.response_text == "A"


@pytest.mark.asyncio
async def test_final_transform_timed_out_hook_is_discarded():
    @hook(EVENT, priority=1, timeout_ms=20)
    async def slow(ctx):
        ctx.draft.response_text = "late"
        await asyncio.sleep(1)

    @hook(EVENT, priority=2)
    async def fine(ctx):
        ctx.draft.response_text += "+"

    assert await emit_final_transform(registry_of(slow, fine), streamed("A")) == "A+"


@pytest.mark.asyncio
async def test_final_transform_a_hook_cancelled_from_inside_is_skipped_and_the_chain_goes_on():
    @hook(EVENT, priority=1)
    async def cancelled(ctx):
        ctx.draft.response_text = "never"
        raise asyncio.CancelledError

    @hook(EVENT, priority=2)
    async def fine(ctx):
        ctx.draft.response_text += "+"

    assert await emit_final_transform(registry_of(cancelled, fine), streamed("A")) == "A+"


@pytest.mark.asyncio
async def test_final_transform_the_callers_cancellation_propagates():
    started = asyncio.Event()

    @hook(EVENT, timeout_ms=5000)
    async def waits(ctx):
        started.set()
        await asyncio.sleep(10)

    task = asyncio.create_task(emit_final_transform(registry_of(waits), streamed()))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_final_transform_a_returned_draft_replaces_the_current_one():
    @hook(EVENT)
    async def replace(ctx):
        return FinalResponseDraft("Replaced.", ctx.draft.response_kind, ctx.draft.envelope)

    assert await emit_final_transform(registry_of(replace), streamed()) == "Replaced."


@pytest.mark.asyncio
async def test_final_transform_reads_back_only_the_text():
    @hook(EVENT)
    async def meddle(ctx):
        ctx.draft.response_kind = "system"
        ctx.draft.response_text = "New text."

    ctx = streamed()

    assert await emit_final_transform(registry_of(meddle), ctx) == "New text."
    assert ctx.draft.response_kind == "system"  # changed on the draft, but nothing reads it


@pytest.mark.asyncio
@pytest.mark.parametrize("rewrite", ["", "   \n", "The streamed answer."])
async def test_final_transform_blank_or_unchanged_text_keeps_the_streamed_text(rewrite):
    @hook(EVENT)
    async def blank(ctx):
        ctx.draft.response_text = rewrite

    assert await emit_final_transform(registry_of(blank), streamed()) == "The streamed answer."


@pytest.mark.asyncio
async def test_final_transform_a_wrong_return_value_is_a_failure():
    @hook(EVENT, priority=1)
    async def wrong(ctx):
        ctx.draft.response_text = "discarded"
        return "a string"

    registry = registry_of(wrong)

    assert await emit_final_transform(registry, streamed("A")) == "A"
    assert registry.all_hooks()[0].stats.failures == 1


@pytest.mark.asyncio
async def test_final_transform_without_hooks_returns_the_streamed_text():
    assert await emit_final_transform(HookRegistry.empty(), streamed("A")) == "A"


@pytest.mark.asyncio
async def test_final_transform_monitor_mode_changes_nothing():
    @hook(EVENT)
    async def trial(ctx):
        ctx.draft.response_text = "changed"

    registry = registry_of(trial, hooks={"trial": {"mode": "monitor"}})

    assert await emit_final_transform(registry, streamed("A")) == "A"
    assert registry.all_hooks()[0].stats.monitored_effects == 1


@pytest.mark.asyncio
async def test_final_transform_an_engine_failure_keeps_the_streamed_text():
    class Exploding(HookRegistry):
        __slots__ = ()

        def matching(self, event_name, agent_name, room_id):
            raise RuntimeError("registry broke")

    assert await emit_final_transform(Exploding({}), streamed("A")) == "A"


def test_final_response_draft_is_mutable_and_copies_independently():
    draft = FinalResponseDraft("a", "ai", ENVELOPE)
    copy = draft.copy()
    copy.response_text = "b"

    assert draft.response_text == "a"
    assert copy.envelope is draft.envelope


def test_final_transform_context_takes_its_envelope_from_the_draft():
    ctx = FinalResponseTransformContext(draft=FinalResponseDraft("a", "team", ENVELOPE))

    assert ctx.envelope is ENVELOPE
    assert ctx.hook_scope() == ("code", "!room:localhost")
    assert FinalResponseTransformContext().draft.response_text == ""
