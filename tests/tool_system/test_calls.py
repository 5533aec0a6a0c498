"""`call_tool`: the tool hooks around every call (gate, run, observe), on copies, with errors as results."""

import asyncio
import threading
import time

import pytest

from mindroom.hooks import EVENT_TOOL_AFTER_CALL, EVENT_TOOL_BEFORE_CALL, HookRegistry, hook
from mindroom.tool_system.calls import call_tool, declined_result, result_text, tool_trace
from mindroom.tool_system.runtime_context import (
    ToolCallRecord,
    ToolRuntimeContext,
    bind_runtime_context,
    emit_custom_event,
)
from mindroom.tool_system.spec import ToolError, ToolSpec
from tests.hooks.support import stub_plugin

pytestmark = pytest.mark.asyncio


def registry_of(*callbacks):
    return HookRegistry.from_plugins([stub_plugin("guard", callbacks)])


def turn(registry, **fields):
    defaults = {"agent_name": "helper", "room_id": "!room:hs", "thread_id": "$root", "requester_id": "@u:hs"}
    return ToolRuntimeContext(registry, **{**defaults, "session_id": "!room:hs:$root", **fields})


class Recorder:
    """A tool with a side effect: it counts its runs and remembers their arguments."""

    def __init__(self, result=None, error=None):
        self.calls = []
        self.result = result
        self.error = error

    def spec(self, name="write_note"):
        def tool(**arguments):
            self.calls.append(arguments)
            if self.error is not None:
                raise self.error
            return self.result

        return ToolSpec(name=name, function=tool)


async def test_call_tool_without_hooks_runs_the_tool_and_records_it():
    tool = Recorder(result="done")
    context = turn(HookRegistry.empty())

    with bind_runtime_context(context):
        text = await call_tool(tool.spec(), "helper", {"path": "a.txt"})

    assert text == "done"
    assert tool.calls == [{"path": "a.txt"}]
    (record,) = context.calls
    assert (record.tool_name, dict(record.arguments), record.result, record.error, record.blocked) == (
        "write_note",
        {"path": "a.txt"},
        "done",
        None,
        False,
    )


async def test_call_tool_gate_decline_replaces_the_call_with_the_reason():
    seen = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def no_secrets(ctx):
        if "secret" in ctx.arguments["path"]:
            ctx.decline("Sensitive files must stay unread.")

    @hook(EVENT_TOOL_AFTER_CALL)
    async def audit(ctx):
        seen.append((ctx.tool_name, ctx.arguments, ctx.result, ctx.error, ctx.blocked, ctx.duration_ms))

    tool = Recorder(result="done")
    context = turn(registry_of(no_secrets, audit))
    with bind_runtime_context(context):
        text = await call_tool(tool.spec(), "helper", {"path": "secret.txt"})

    assert tool.calls == []
    assert "[TOOL CALL DECLINED]" in text and "Sensitive files must stay unread." in text
    assert text == declined_result("write_note", "Sensitive files must stay unread.")
    ((name, arguments, result, error, blocked, duration_ms),) = seen
    assert (name, arguments, result, error, blocked) == ("write_note", {"path": "secret.txt"}, text, None, True)
    assert duration_ms >= 0
    assert context.calls[0].blocked is True


async def test_call_tool_gate_sees_the_turn_scope():
    seen = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def look(ctx):
        seen.append((ctx.agent_name, ctx.room_id, ctx.thread_id, ctx.requester_id, ctx.session_id, ctx.correlation_id))

    with bind_runtime_context(turn(registry_of(look), correlation_id="corr-1")):
        await call_tool(Recorder().spec(), "helper", {})

    assert seen == [("helper", "!room:hs", "$root", "@u:hs", "!room:hs:$root", "corr-1")]


async def test_call_tool_gate_filtered_to_other_agents_does_not_apply():
    @hook(EVENT_TOOL_BEFORE_CALL, agents=["someone-else"])
    async def block_all(ctx):
        ctx.decline("no")

    tool = Recorder(result="ran")
    with bind_runtime_context(turn(registry_of(block_all))):
        assert await call_tool(tool.spec(), "helper", {}) == "ran"


@pytest.mark.parametrize("failure", ["raise", "timeout"])
async def test_call_tool_failing_gate_fails_open(failure):
    @hook(EVENT_TOOL_BEFORE_CALL, timeout_ms=50)
    async def broken(ctx):
        if failure == "raise":
            raise RuntimeError("gate bug")
        await asyncio.sleep(1)
        ctx.decline("too late")

    tool = Recorder(result="ran")
    with bind_runtime_context(turn(registry_of(broken))):
        text = await call_tool(tool.spec(), "helper", {"x": 1})

    assert text == "ran"
    assert tool.calls == [{"x": 1}]


async def test_call_tool_failing_fail_closed_gate_declines():
    @hook(EVENT_TOOL_BEFORE_CALL, fail_closed=True)
    async def strict(ctx):
        raise RuntimeError("policy service down")

    tool = Recorder(result="ran")
    with bind_runtime_context(turn(registry_of(strict))):
        text = await call_tool(tool.spec(), "helper", {})

    assert tool.calls == []
    assert "[TOOL CALL DECLINED]" in text and "guard:strict failed" in text


async def test_call_tool_after_call_sees_result_copy_and_duration():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL)
    async def observe(ctx):
        seen.append((ctx.result, ctx.error, ctx.blocked, ctx.duration_ms))

    async def slow(n: int) -> dict:
        await asyncio.sleep(0.05)
        return {"n": n, "items": [1, 2]}

    with bind_runtime_context(turn(registry_of(observe))):
        started = time.perf_counter()
        text = await call_tool(ToolSpec("slow", slow), "helper", {"n": 3})
        outside_ms = (time.perf_counter() - started) * 1000

    assert text == '{"n": 3, "items": [1, 2]}'
    ((result, error, blocked, duration_ms),) = seen
    assert result == {"n": 3, "items": [1, 2]}
    assert error is None and blocked is False
    assert 40 <= duration_ms <= outside_ms  # the call's own time, in milliseconds, within the whole call


async def test_call_tool_observer_mutating_its_copies_changes_nothing():
    returned = {"items": [1, 2]}
    received = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def meddling_gate(ctx):
        ctx.arguments["tags"].append("injected")
        ctx.arguments["extra"] = True

    @hook(EVENT_TOOL_AFTER_CALL)
    async def meddling_observer(ctx):
        ctx.result["items"].append("tampered")
        ctx.result["new"] = 1
        ctx.arguments["tags"].clear()

    def tool(tags: list) -> dict:
        received.append(list(tags))
        return returned

    arguments = {"tags": ["a"]}
    context = turn(registry_of(meddling_gate, meddling_observer))
    with bind_runtime_context(context):
        text = await call_tool(ToolSpec("tagger", tool), "helper", arguments)

    assert received == [["a"]]
    assert text == '{"items": [1, 2]}'
    assert returned == {"items": [1, 2]}
    assert arguments == {"tags": ["a"]}
    assert dict(context.calls[0].arguments) == {"tags": ["a"]}


async def test_call_tool_hooks_and_trace_see_what_the_model_asked_even_if_the_tool_mutates_it():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL)
    async def observe(ctx):
        seen.append(ctx.arguments)

    def greedy(tags: list) -> str:
        tags.append("added by the tool")
        return "ok"

    context = turn(registry_of(observe))
    with bind_runtime_context(context):
        await call_tool(ToolSpec("greedy", greedy), "helper", {"tags": ["a"]})

    assert seen == [{"tags": ["a"]}]
    assert dict(context.calls[0].arguments) == {"tags": ["a"]}


async def test_call_tool_raising_tool_becomes_an_error_result_and_after_call_fires():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL)
    async def observe(ctx):
        seen.append((ctx.result, ctx.error, ctx.blocked))

    tool = Recorder(error=ValueError("disk on fire"))
    context = turn(registry_of(observe))
    with bind_runtime_context(context):
        text = await call_tool(tool.spec(), "helper", {})

    assert text == "[TOOL CALL FAILED]\nTool: write_note\nError: ValueError: disk on fire"
    ((result, error, blocked),) = seen
    assert result is None and isinstance(error, ValueError) and blocked is False
    assert context.calls[0].error == "ValueError: disk on fire"


async def test_call_tool_tool_error_message_is_shown_as_is():
    tool = Recorder(error=ToolError("path is outside your workspace"))

    text = await call_tool(tool.spec(), "helper", {})

    assert text.endswith("Error: path is outside your workspace")


async def test_call_tool_contains_even_system_exit_from_tool_code():
    tool = Recorder(error=SystemExit(3))

    assert "SystemExit" in await call_tool(tool.spec(), "helper", {})


async def test_call_tool_caller_cancellation_propagates():
    started = asyncio.Event()

    async def forever():
        started.set()
        await asyncio.sleep(60)

    task = asyncio.ensure_future(call_tool(ToolSpec("forever", forever), "helper", {}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_call_tool_runs_sync_in_thread_tools_off_the_event_loop():
    loop_thread = threading.get_ident()
    threads = []

    def blocking():
        threads.append(threading.get_ident())
        return "ok"

    assert await call_tool(ToolSpec("blocking", blocking, in_thread=True), "helper", {}) == "ok"
    assert await call_tool(ToolSpec("inline", blocking), "helper", {}) == "ok"
    assert threads[0] != loop_thread and threads[1] == loop_thread


async def test_call_tool_custom_event_from_tool_reaches_its_hooks():
    seen = []

    @hook("todo:item_completed")
    async def audit(ctx):
        seen.append((ctx.payload, ctx.source_plugin, ctx.agent_name, ctx.room_id, ctx.correlation_id))

    async def complete(item_id: str) -> str:
        await emit_custom_event("todo", "todo:item_completed", {"item_id": item_id})
        return "completed"

    def complete_in_thread(item_id: str) -> str:
        return "no loop here"

    with bind_runtime_context(turn(registry_of(audit), correlation_id="corr-7")):
        assert await call_tool(ToolSpec("complete", complete), "helper", {"item_id": "123"}) == "completed"
        await call_tool(ToolSpec("sync", complete_in_thread, in_thread=True), "helper", {"item_id": "x"})

    assert seen == [({"item_id": "123"}, "todo", "helper", "!room:hs", "corr-7")]


async def test_call_tool_uncopyable_result_reaches_observers_as_the_model_text():
    seen = []

    @hook(EVENT_TOOL_AFTER_CALL)
    async def observe(ctx):
        seen.append(ctx.result)

    lock = threading.Lock()
    with bind_runtime_context(turn(registry_of(observe))):
        text = await call_tool(ToolSpec("locky", lambda: lock), "helper", {})

    assert seen == [text]


@pytest.mark.parametrize(
    ("value", "text"),
    [("plain", "plain"), (None, "(no output)"), (b"bytes", "bytes"), ({"a": [1]}, '{"a": [1]}'), (42, "42")],
)
async def test_result_text_formats_values_for_the_model(value, text):
    assert result_text(value) == text


async def test_result_text_caps_huge_results():
    assert result_text("x" * 200_000).endswith("[result truncated to 100000 characters]")


async def test_tool_trace_previews_each_call():
    records = [
        ToolCallRecord("read_file", {"path": "a"}, "content", None, False, 1.0),
        ToolCallRecord("read_file", {"path": "secret"}, "declined", None, True, 0.1),
        ToolCallRecord("shell", {"command": "x" * 500}, "[failed]", "boom", False, 2.0),
    ]

    entries = tool_trace(records)

    assert [(e.tool_name, e.result_preview, e.error, e.blocked) for e in entries] == [
        ("read_file", "content", None, False),
        ("read_file", "declined", None, True),
        ("shell", None, "boom", False),
    ]
    assert entries[0].args_preview == '{"path": "a"}'
    assert len(entries[2].args_preview) == 200
    assert tool_trace([]) is None
