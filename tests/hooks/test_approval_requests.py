"""`ToolBeforeCallContext.request_approval`: the bound requester answers, and the wait stops the hook's clock."""

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, ApprovalRequest, HookRegistry, ToolBeforeCallContext, hook
from mindroom.hooks.execution import emit_gate
from tests.hooks.support import stub_plugin


def gate_ctx(requester=None, **arguments):
    return ToolBeforeCallContext(
        tool_name="run_shell_command",
        arguments=arguments or {"command": "rm -rf build"},
        agent_name="code",
        room_id="!room:localhost",
        thread_id="$thread",
        requester_id="@alice:localhost",
        session_id="!room:localhost:$thread",
        correlation_id="turn-1",
        approval_requester=requester,
    )


class Person:
    """A scripted approver: answers `answer` after `delay_s`, and remembers every request."""

    def __init__(self, answer: bool, delay_s: float = 0.0) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        await asyncio.sleep(self.delay_s)
        return self.answer


@hook(EVENT_TOOL_BEFORE_CALL, name="ask_first")
async def ask_first(ctx):
    if not await ctx.request_approval("it deletes files", timeout_s=30):
        ctx.decline("A person said no.")


@pytest.mark.asyncio
async def test_request_approval_passes_the_call_and_prompt_to_the_requester():
    person = Person(True)
    registry = HookRegistry.from_plugins([stub_plugin("guard", [ask_first])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(person))

    assert ctx.declined is False
    (request,) = person.requests
    assert request.prompt == "it deletes files"
    assert request.timeout_s == 30.0
    assert (request.tool_name, dict(request.arguments)) == ("run_shell_command", {"command": "rm -rf build"})
    assert (request.agent_name, request.room_id, request.thread_id) == ("code", "!room:localhost", "$thread")
    assert (request.requester_id, request.correlation_id) == ("@alice:localhost", "turn-1")
    assert (request.plugin_name, request.hook_name) == ("guard", "ask_first")


@pytest.mark.asyncio
async def test_request_approval_denied_lets_the_gate_decline():
    registry = HookRegistry.from_plugins([stub_plugin("guard", [ask_first])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(Person(False)))

    assert (ctx.declined, ctx.decline_reason) == (True, "A person said no.")


@pytest.mark.asyncio
async def test_request_approval_unbound_logs_a_warning_and_denies():
    ctx = gate_ctx(None)

    with capture_logs() as logs:
        approved = await ctx.request_approval("may I?")

    assert approved is False
    assert any("approval requested" in entry["event"] and entry["log_level"] == "warning" for entry in logs)


@pytest.mark.asyncio
async def test_request_approval_rejects_a_non_positive_timeout():
    with pytest.raises(ValueError, match="timeout_s"):
        await gate_ctx(Person(True)).request_approval("may I?", timeout_s=0)


@pytest.mark.asyncio
async def test_request_approval_wait_does_not_count_against_the_hook_timeout():
    # The gate's budget is 200 ms; the person takes 600 ms. A timed-out gate would fail open and lose its decline.
    registry = HookRegistry.from_plugins([stub_plugin("guard", [ask_first])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(Person(False, delay_s=0.6)))

    assert ctx.declined is True
    stats = registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats
    assert (stats.failures, stats.timeouts) == (0, 0)


@hook(EVENT_TOOL_BEFORE_CALL, name="look_then_ask")
async def look_then_ask(ctx):
    await asyncio.sleep(0.01)  # the hook is past its first await (its clock is running) when it asks
    if not await ctx.request_approval("after a look"):
        ctx.decline("no")


@pytest.mark.asyncio
async def test_request_approval_pauses_a_hook_already_past_its_first_await():
    registry = HookRegistry.from_plugins([stub_plugin("guard", [look_then_ask])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(Person(False, delay_s=0.5)))

    assert ctx.declined is True
    assert registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats.failures == 0


@hook(EVENT_TOOL_BEFORE_CALL, name="slow_after_asking")
async def slow_after_asking(ctx):
    await ctx.request_approval("quick question")
    await asyncio.sleep(0.5)  # its own work after the answer counts again
    ctx.decline("never reached within the budget")


@pytest.mark.asyncio
async def test_request_approval_clock_runs_again_after_the_answer():
    registry = HookRegistry.from_plugins([stub_plugin("guard", [slow_after_asking])])

    ctx = await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(Person(True, delay_s=0.3)))

    assert ctx.declined is False  # the gate timed out (failing open), so its decline was discarded
    assert registry.hooks_for(EVENT_TOOL_BEFORE_CALL)[0].stats.timeouts == 1


@pytest.mark.asyncio
async def test_request_approval_caller_cancellation_ends_the_wait():
    registry = HookRegistry.from_plugins([stub_plugin("guard", [ask_first])])
    person = Person(True, delay_s=30)
    task = asyncio.ensure_future(emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate_ctx(person)))
    while not person.requests:
        await asyncio.sleep(0.01)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
