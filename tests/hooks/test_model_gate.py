"""The `model:before_call` gate in the hook host: rewrites chain, the first decline wins, failures roll back."""

import asyncio

import pytest

from mindroom.hooks import EVENT_MODEL_BEFORE_CALL, HookRegistry, ModelBeforeCallContext, hook, hook_telemetry
from mindroom.hooks import breaker as breaker_module
from mindroom.hooks.execution import BREAKER_THRESHOLD
from mindroom.hooks.model_gate import emit_model_gate
from tests.hooks.support import stub_plugin


def model_ctx() -> ModelBeforeCallContext:
    return ModelBeforeCallContext(
        agent_name="helper",
        room_id="!room:localhost",
        model_id="m",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        params={"tools": None, "tool_choice": None},
    )


def registry(*callbacks, name="p", **kwargs) -> HookRegistry:
    return HookRegistry.from_plugins([stub_plugin(name, callbacks, **kwargs)])


@pytest.mark.asyncio
async def test_model_gate_rewrites_chain_in_priority_order():
    @hook(EVENT_MODEL_BEFORE_CALL, priority=10)
    async def first(ctx):
        ctx.messages[-1]["content"] += " there"

    @hook(EVENT_MODEL_BEFORE_CALL, priority=20)
    async def second(ctx):
        ctx.messages.insert(1, {"role": "user", "content": "context"})

    ctx = await emit_model_gate(registry(second, first), model_ctx())

    assert [m["content"] for m in ctx.messages] == ["Be brief.", "context", "hi there"]
    assert not ctx.declined


@pytest.mark.asyncio
async def test_model_gate_first_decline_stops_the_chain():
    ran = []

    @hook(EVENT_MODEL_BEFORE_CALL, priority=1)
    async def refuse(ctx):
        ctx.decline("no")

    @hook(EVENT_MODEL_BEFORE_CALL, priority=2)
    async def later(ctx):
        ran.append(1)

    reg = registry(refuse, later)
    ctx = await emit_model_gate(reg, model_ctx())

    assert (ctx.declined, ctx.decline_reason, ran) == (True, "no", [])
    assert [row.declines for row in hook_telemetry(reg)] == [1, 0]


@pytest.mark.asyncio
async def test_model_gate_exception_discards_in_place_edits_and_fails_open():
    @hook(EVENT_MODEL_BEFORE_CALL)
    async def broken(ctx):
        ctx.messages[-1]["content"] = "tampered"
        ctx.params["tools"] = []
        ctx.decline("half-way")
        raise ValueError("boom")

    reg = registry(broken)
    ctx = await emit_model_gate(reg, model_ctx())

    assert ctx.messages == model_ctx().messages
    assert ctx.params == {"tools": None, "tool_choice": None}
    assert not ctx.declined
    assert hook_telemetry(reg)[0].failures == 1


@pytest.mark.asyncio
async def test_model_gate_timeout_fails_closed_when_marked():
    @hook(EVENT_MODEL_BEFORE_CALL, name="slow", timeout_ms=20, fail_closed=True)
    async def slow(ctx):
        ctx.messages.clear()
        await asyncio.sleep(5)

    reg = registry(slow, name="safety")
    ctx = await emit_model_gate(reg, model_ctx())

    assert ctx.declined
    assert ctx.decline_reason == "Model call blocked: safety check safety:slow failed."
    assert ctx.messages == model_ctx().messages
    assert hook_telemetry(reg)[0].timeouts == 1


@pytest.mark.asyncio
async def test_model_gate_fail_closed_keeps_declining_while_its_breaker_is_open(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(breaker_module, "now", lambda: now[0])

    @hook(EVENT_MODEL_BEFORE_CALL, name="guard", fail_closed=True)
    async def guard(ctx):
        raise RuntimeError("down")

    reg = registry(guard, name="safety")
    for _ in range(BREAKER_THRESHOLD):
        await emit_model_gate(reg, model_ctx())
    ctx = await emit_model_gate(reg, model_ctx())

    assert ctx.decline_reason == "Model call blocked: safety check safety:guard circuit open."
    assert hook_telemetry(reg)[0].skipped == 1


@pytest.mark.parametrize(
    "mangle",
    [
        lambda ctx: ctx.messages.clear(),
        lambda ctx: ctx.messages.append({"role": "users", "content": "near miss"}),
        lambda ctx: ctx.messages.append({"role": "user", "content": 42}),
        lambda ctx: ctx.messages.append("user: hi"),
        lambda ctx: ctx.params.update(tools={"name": "x"}),
    ],
)
@pytest.mark.asyncio
async def test_model_gate_request_it_cannot_send_counts_as_a_failure(mangle):
    @hook(EVENT_MODEL_BEFORE_CALL)
    async def bad(ctx):
        mangle(ctx)

    reg = registry(bad)
    ctx = await emit_model_gate(reg, model_ctx())

    assert ctx.messages == model_ctx().messages
    assert ctx.params == {"tools": None, "tool_choice": None}
    row = hook_telemetry(reg)[0]
    assert row.failures == 1
    assert "messages" in row.last_error or "params" in row.last_error


@pytest.mark.asyncio
async def test_model_gate_monitor_mode_counts_but_never_applies():
    @hook(EVENT_MODEL_BEFORE_CALL, name="watch")
    async def watch(ctx):
        ctx.messages[-1]["content"] = "rewritten"
        ctx.decline("would refuse")

    reg = registry(watch, hooks={"watch": {"mode": "monitor"}})
    ctx = await emit_model_gate(reg, model_ctx())

    assert ctx.messages == model_ctx().messages
    assert not ctx.declined
    assert hook_telemetry(reg)[0].monitored_effects == 1


@pytest.mark.asyncio
async def test_model_gate_rollback_returns_to_the_last_good_request_and_never_touches_the_runs_own():
    @hook(EVENT_MODEL_BEFORE_CALL, priority=1)
    async def broken_first(ctx):
        ctx.messages[-1]["content"] = "tampered"
        raise RuntimeError("first")

    @hook(EVENT_MODEL_BEFORE_CALL, priority=2)
    async def rewrite(ctx):
        ctx.messages[-1]["content"] = "hi, rewritten"

    @hook(EVENT_MODEL_BEFORE_CALL, priority=3)
    async def broken_last(ctx):
        ctx.messages[-1]["content"] = "tampered again"
        ctx.params["tools"] = []
        raise RuntimeError("last")

    ctx = model_ctx()
    own = model_ctx()
    ctx.keep_pristine(own.messages, own.params)

    result = await emit_model_gate(registry(broken_first, rewrite, broken_last), ctx)

    assert [m["content"] for m in result.messages] == ["Be brief.", "hi, rewritten"]
    assert result.params == {"tools": None, "tool_choice": None}
    assert own.messages == model_ctx().messages  # the run's own request is never edited
