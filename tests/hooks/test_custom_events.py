"""Custom events: namespaced, observer mode, emitted from tool code, recursion stops at depth 3."""

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.constants import RuntimePaths
from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    CustomEventContext,
    HookRegistry,
    MessageEnrichContext,
    hook,
    hook_telemetry,
)
from mindroom.hooks.execution import MAX_EMIT_DEPTH, emit, emit_collect
from mindroom.tool_system.runtime_context import (
    ToolRuntimeContext,
    bind_runtime_context,
    emit_custom_event,
    get_runtime_context,
    set_registry_provider,
)
from tests.hooks.support import stub_plugin


@pytest.fixture
def no_registry_provider():
    set_registry_provider(None)
    yield
    set_registry_provider(None)


@pytest.mark.asyncio
async def test_custom_event_runs_hooks_in_observer_mode():
    order = []

    @hook("todo:item_completed", priority=1)
    async def broken(ctx):
        order.append("broken")
        raise RuntimeError("boom")

    @hook("todo:item_completed", priority=2)
    async def audit(ctx):
        await asyncio.sleep(0)
        order.append(("audit", ctx.payload["item_id"]))

    registry = HookRegistry.from_plugins([stub_plugin("todo", [broken, audit])])
    ctx = CustomEventContext(event_name="todo:item_completed", payload={"item_id": "123"})
    await emit(registry, "todo:item_completed", ctx)

    assert order == ["broken", ("audit", "123")]
    assert hook_telemetry(registry)[0].execution_mode == "observer"


@pytest.mark.asyncio
async def test_custom_event_default_timeout_is_1000_ms():
    @hook("todo:item_completed")
    async def audit(ctx):
        pass

    registry = HookRegistry.from_plugins([stub_plugin("todo", [audit])])

    assert registry.hooks_for("todo:item_completed")[0].timeout_ms == 1000


@pytest.mark.parametrize(
    "event", ["message:custom", "agent:x", "bot:x", "schedule:x", "reaction:x", "config:x", "tool:x"]
)
def test_custom_event_reserved_namespaces_refused_by_decorator(event):
    with pytest.raises(ValueError, match="reserved"):
        hook(event)


@pytest.mark.parametrize("event", ["message:custom", "tool:x", "message:received", "tool:before_call"])
@pytest.mark.asyncio
async def test_custom_event_emit_refuses_reserved_and_builtin_events(event):
    with pytest.raises(ValueError, match=event.split(":")[0]):
        await emit_custom_event("p", event, {})


@pytest.mark.parametrize("event", ["nocolon", "Bad:Case", "a:"])
@pytest.mark.asyncio
async def test_custom_event_emit_refuses_malformed_names(event):
    with pytest.raises(ValueError, match="invalid"):
        await emit_custom_event("p", event, {})


@pytest.mark.asyncio
async def test_custom_event_emitted_from_tool_code_with_bound_runtime_context(tmp_path):
    seen = []
    sent = []

    async def sender(room_id, text, *, thread_id=None, extra_content=None):
        sent.append((room_id, text))
        return "$e"

    @hook("todo:item_completed")
    async def audit(ctx):
        seen.append(
            {
                "payload": ctx.payload,
                "source": ctx.source_plugin,
                "plugin": ctx.plugin_name,
                "agent": ctx.agent_name,
                "room": ctx.room_id,
                "correlation": ctx.correlation_id,
                "settings": ctx.settings,
            }
        )
        (ctx.state_root / "events.jsonl").write_text("x")
        await ctx.send_message(ctx.room_id, "done")

    registry = HookRegistry.from_plugins([stub_plugin("todo", [audit], settings={"k": "v"})])
    runtime = ToolRuntimeContext(
        registry=registry,
        agent_name="code",
        room_id="!room:localhost",
        correlation_id="corr-1",
        runtime_paths=RuntimePaths.for_directory(tmp_path),
        message_sender=sender,
    )

    async def tool_method():
        await emit_custom_event("my-plugin", "todo:item_completed", {"item_id": "123"})

    with bind_runtime_context(runtime):
        assert get_runtime_context() is runtime
        await tool_method()
    assert get_runtime_context() is None

    assert seen == [
        {
            "payload": {"item_id": "123"},
            "source": "my-plugin",
            "plugin": "todo",
            "agent": "code",
            "room": "!room:localhost",
            "correlation": "corr-1",
            "settings": {"k": "v"},
        }
    ]
    assert (tmp_path / "mindroom_data" / "plugins" / "todo" / "events.jsonl").is_file()
    assert sent == [("!room:localhost", "done")]


@pytest.mark.asyncio
async def test_custom_event_payload_is_copied():
    @hook("todo:changed")
    async def mutate(ctx):
        ctx.payload["added"] = True

    registry = HookRegistry.from_plugins([stub_plugin("todo", [mutate])])
    payload = {"item_id": "1"}
    with bind_runtime_context(ToolRuntimeContext(registry=registry)):
        await emit_custom_event("todo", "todo:changed", payload)

    assert payload == {"item_id": "1"}


@pytest.mark.asyncio
async def test_custom_event_hook_filters_use_bound_agent():
    calls = []

    @hook("todo:changed", agents=["code"])
    async def code_only(ctx):
        calls.append(ctx.agent_name)

    registry = HookRegistry.from_plugins([stub_plugin("todo", [code_only])])
    with bind_runtime_context(ToolRuntimeContext(registry=registry, agent_name="other")):
        await emit_custom_event("todo", "todo:changed", {})
    with bind_runtime_context(ToolRuntimeContext(registry=registry, agent_name="code")):
        await emit_custom_event("todo", "todo:changed", {})

    assert calls == ["code"]


@pytest.mark.asyncio
async def test_custom_event_without_registry_is_dropped_with_warning(no_registry_provider):
    with capture_logs() as logs:
        await emit_custom_event("todo", "todo:changed", {})

    assert any(entry["log_level"] == "warning" and entry["hook_event"] == "todo:changed" for entry in logs)


@pytest.mark.asyncio
async def test_custom_event_uses_registry_provider_when_nothing_bound(no_registry_provider):
    calls = []

    @hook("todo:changed")
    async def audit(ctx):
        calls.append(ctx.payload)

    registry = HookRegistry.from_plugins([stub_plugin("todo", [audit])])
    set_registry_provider(lambda: registry)
    await emit_custom_event("todo", "todo:changed", {"n": 1})

    assert calls == [{"n": 1}]


@pytest.mark.asyncio
async def test_custom_event_recursion_guard_drops_third_nested_emission():
    assert MAX_EMIT_DEPTH == 3
    depths = []

    @hook("chain:step")
    async def step(ctx):
        depth = ctx.payload["depth"]
        depths.append(depth)
        await emit_custom_event("chain", "chain:step", {"depth": depth + 1})

    registry = HookRegistry.from_plugins([stub_plugin("chain", [step])])
    with capture_logs() as logs, bind_runtime_context(ToolRuntimeContext(registry=registry)):
        await emit_custom_event("chain", "chain:step", {"depth": 0})

    assert depths == [0, 1, 2]
    dropped = [entry for entry in logs if entry["event"] == "nested hook emission dropped"]
    assert len(dropped) == 1
    assert dropped[0]["log_level"] == "warning"
    assert dropped[0]["hook_event"] == "chain:step"
    assert hook_telemetry(registry)[0].failures == 0


@pytest.mark.asyncio
async def test_custom_event_recursion_guard_with_explicit_registry():
    depths = []

    @hook("chain:step")
    async def step(ctx):
        depth = ctx.payload["depth"]
        depths.append(depth)
        await asyncio.sleep(0)
        await emit(registry, "chain:step", CustomEventContext(event_name="chain:step", payload={"depth": depth + 1}))

    registry = HookRegistry.from_plugins([stub_plugin("chain", [step])])
    await emit(registry, "chain:step", CustomEventContext(event_name="chain:step", payload={"depth": 0}))

    assert depths == [0, 1, 2]


@pytest.mark.asyncio
async def test_custom_event_recursion_guard_resets_between_top_level_emits():
    depths = []

    @hook("chain:step")
    async def step(ctx):
        depths.append(ctx.payload["depth"])
        await emit_custom_event("chain", "chain:step", {"depth": ctx.payload["depth"] + 1})

    registry = HookRegistry.from_plugins([stub_plugin("chain", [step])])
    with bind_runtime_context(ToolRuntimeContext(registry=registry)):
        await emit_custom_event("chain", "chain:step", {"depth": 0})
        await emit_custom_event("chain", "chain:step", {"depth": 0})

    assert depths == [0, 1, 2, 0, 1, 2]


@pytest.mark.asyncio
async def test_custom_event_nesting_counts_across_modes():
    runs = []

    @hook(EVENT_MESSAGE_ENRICH)
    async def enrich(ctx):
        runs.append("enrich")
        await emit_custom_event("chain", "chain:one", {})

    @hook("chain:one")
    async def one(ctx):
        runs.append("one")
        await emit_custom_event("chain", "chain:two", {})

    @hook("chain:two")
    async def two(ctx):
        runs.append("two")
        await emit_custom_event("chain", "chain:three", {})

    @hook("chain:three")
    async def three(ctx):
        runs.append("three")

    registry = HookRegistry.from_plugins([stub_plugin("chain", [enrich, one, two, three])])
    with bind_runtime_context(ToolRuntimeContext(registry=registry)):
        await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert runs == ["enrich", "one", "two"]


@pytest.mark.asyncio
async def test_custom_event_with_no_listeners_is_a_no_op():
    registry = HookRegistry.empty()
    with capture_logs() as logs, bind_runtime_context(ToolRuntimeContext(registry=registry)):
        await emit_custom_event("todo", "todo:nobody_listens", {})

    assert not [entry for entry in logs if entry["log_level"] in {"warning", "error"}]
