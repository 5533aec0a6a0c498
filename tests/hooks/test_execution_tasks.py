"""Each hook runs from its first step to its end in one task and one context, whatever the mode.

Libraries that pin work to the task that started it (anyio cancel scopes under httpx/httpcore,
`ContextVar.set()`/`reset()` pairs) must work inside hooks, and a hook's own timeout is its business.
"""

import asyncio
import contextvars

import httpx
import pytest
import pytest_asyncio

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    BeforeResponseContext,
    HookRegistry,
    MessageEnrichContext,
    MessageReceivedContext,
    ToolBeforeCallContext,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from tests.hooks.support import stub_plugin

MODES = [EVENT_MESSAGE_RECEIVED, EVENT_MESSAGE_ENRICH, EVENT_MESSAGE_BEFORE_RESPONSE, EVENT_TOOL_BEFORE_CALL]


async def run_mode(event, registry):
    """Emit `event` through its mode's function; returns how many hooks' effects survived."""
    if event == EVENT_MESSAGE_RECEIVED:
        ctx = MessageReceivedContext()
        await emit(registry, event, ctx)
        return int(ctx.suppress)
    if event == EVENT_MESSAGE_ENRICH:
        return len(await emit_collect(registry, event, MessageEnrichContext()))
    if event == EVENT_MESSAGE_BEFORE_RESPONSE:
        draft = await emit_transform(registry, event, BeforeResponseContext())
        return draft.response_text.count("+")
    ctx = await emit_gate(registry, event, ToolBeforeCallContext(tool_name="t"))
    return int(ctx.declined)


def apply_effect(ctx, tag):
    """The mode's visible effect: suppress, an item, a mark in the draft, or a decline."""
    if isinstance(ctx, MessageReceivedContext):
        ctx.suppress = True
    elif isinstance(ctx, MessageEnrichContext):
        ctx.add_metadata(tag, "v")
    elif isinstance(ctx, BeforeResponseContext):
        ctx.draft.response_text += "+"
    else:
        ctx.decline(tag)


def expected_effects(event, hooks):
    """Observer and gate show one effect however many hooks made it; collector and transformer one per hook."""
    return hooks if event in (EVENT_MESSAGE_ENRICH, EVENT_MESSAGE_BEFORE_RESPONSE) else 1


def stats_of(registry, event):
    return [h.stats for h in registry.hooks_for(event)]


@pytest_asyncio.fixture
async def http_server():
    """A tiny HTTP/1.1 server on loopback that answers `ok` after a short pause (a second for `/slow`)."""

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    break
                await asyncio.sleep(1 if head.startswith(b"GET /slow") else 0.005)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_hooks_using_httpx_clients_run_in_one_task(event, http_server):
    bodies = []
    hooks = []
    for index in range(3):

        @hook(event, name=f"fetch{index}", priority=index, timeout_ms=5000)
        async def fetch(ctx, index=index):
            async with httpx.AsyncClient(timeout=5) as client:
                response = await client.get(http_server)
                await asyncio.sleep(0)
                second = await client.get(http_server)
            bodies.append(response.text + second.text)
            apply_effect(ctx, f"k{index}")

        hooks.append(fetch)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    effects = await run_mode(event, registry)

    failures = [stats.last_error for stats in stats_of(registry, event) if stats.failures]
    assert failures == []
    # A gate stops at the first decline, so only there does one hook run.
    assert bodies == ["okok"] * (1 if event == EVENT_TOOL_BEFORE_CALL else 3)
    assert effects == expected_effects(event, 1 if event == EVENT_TOOL_BEFORE_CALL else 3)


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("test_request_id", default="-")


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_contextvar_set_and_reset_across_await(event):
    seen = []
    hooks = []
    for index in range(2):

        @hook(event, name=f"tracer{index}", priority=index)
        async def tracer(ctx, index=index):
            token = REQUEST_ID.set(f"hook-{index}")
            try:
                await asyncio.sleep(0.005)
                seen.append(REQUEST_ID.get())
            finally:
                REQUEST_ID.reset(token)
            if event == EVENT_TOOL_BEFORE_CALL and index == 0:
                return  # let the second gate hook run too
            apply_effect(ctx, f"k{index}")

        hooks.append(tracer)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    effects = await run_mode(event, registry)

    assert [s.failures for s in stats_of(registry, event)] == [0, 0]
    assert sorted(seen) == ["hook-0", "hook-1"]
    assert REQUEST_ID.get() == "-"
    assert effects == expected_effects(event, 2)


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_hook_context_changes_stay_with_the_hook(event):
    seen = []

    @hook(event, name="leaky", priority=1)
    async def leaky(ctx):
        REQUEST_ID.set("from-leaky")
        await asyncio.sleep(0)

    @hook(event, name="reader", priority=2)
    async def reader(ctx):
        seen.append(REQUEST_ID.get())

    registry = HookRegistry.from_plugins([stub_plugin("p", [leaky, reader])])
    await run_mode(event, registry)

    assert seen == ["-"]
    assert REQUEST_ID.get() == "-"


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_hook_sees_the_emitters_context(event):
    seen = []

    @hook(event, name="reader")
    async def reader(ctx):
        await asyncio.sleep(0)
        seen.append(REQUEST_ID.get())

    registry = HookRegistry.from_plugins([stub_plugin("p", [reader])])
    token = REQUEST_ID.set("turn-42")
    try:
        await run_mode(event, registry)
    finally:
        REQUEST_ID.reset(token)

    assert seen == ["turn-42"]


async def _own_timeout(seconds):
    async with asyncio.timeout(seconds):
        await asyncio.sleep(1)


async def _own_wait_for(seconds):
    await asyncio.wait_for(asyncio.sleep(1), seconds)


OWN_TIMEOUTS = {"timeout": _own_timeout, "wait_for": _own_wait_for}


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("kind", sorted(OWN_TIMEOUTS))
@pytest.mark.parametrize("hooks_count", [1, 2])
@pytest.mark.asyncio
async def test_execution_hook_handling_its_own_timeout_keeps_its_effect(event, kind, hooks_count):
    handled = []
    hooks = []
    for index in range(hooks_count):

        @hook(event, name=f"patient{index}", priority=index, timeout_ms=2000)
        async def patient(ctx, index=index):
            try:
                await OWN_TIMEOUTS[kind](0.01)
            except TimeoutError:
                handled.append(index)
            await asyncio.sleep(0)
            if event == EVENT_TOOL_BEFORE_CALL and index < hooks_count - 1:
                return
            apply_effect(ctx, f"k{index}")

        hooks.append(patient)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    effects = await run_mode(event, registry)

    assert sorted(handled) == list(range(hooks_count))
    assert effects == expected_effects(event, hooks_count)
    assert [(s.failures, s.timeouts) for s in stats_of(registry, event)] == [(0, 0)] * hooks_count
    assert asyncio.current_task().cancelling() == 0


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_own_timeout_in_a_hook_does_not_cancel_the_caller(event):
    @hook(event, name="patient", timeout_ms=2000)
    async def patient(ctx):
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            pass

    registry = HookRegistry.from_plugins([stub_plugin("p", [patient])])

    await run_mode(event, registry)
    await asyncio.sleep(0.01)  # the caller goes on: no cancellation was left behind

    assert asyncio.current_task().cancelling() == 0


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_own_timeout_then_engine_timeout_is_still_a_timeout(event):
    @hook(event, name="slowpoke", timeout_ms=60)
    async def slowpoke(ctx):
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            pass
        apply_effect(ctx, "late")
        await asyncio.sleep(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slowpoke])])

    effects = await run_mode(event, registry)

    assert effects == 0  # cut off at its timeout: the effect it applies after its own timeout never lands
    assert [(s.failures, s.timeouts) for s in stats_of(registry, event)] == [(1, 1)]


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_caller_cancellation_propagates_through_a_hooks_own_timeout(event):
    started = asyncio.Event()

    @hook(event, name="patient", timeout_ms=3_600_000)
    async def patient(ctx):
        started.set()
        try:
            async with asyncio.timeout(3600):
                await asyncio.sleep(7200)
        except TimeoutError:
            pass

    registry = HookRegistry.from_plugins([stub_plugin("p", [patient])])
    task = asyncio.ensure_future(run_mode(event, registry))
    await started.wait()
    task.cancel()

    # Held by the hook's own timeout, the task would go on for an hour; the guard only keeps that from hanging.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)
    assert [s.failures for s in stats_of(registry, event)] == [0]


@pytest.mark.asyncio
async def test_execution_collector_hooks_each_run_in_one_task():
    tasks = {}

    def make(index):
        @hook(EVENT_MESSAGE_ENRICH, name=f"h{index}", priority=index)
        async def callback(ctx):
            first = asyncio.current_task()
            for _ in range(3):
                await asyncio.sleep(0)
                assert asyncio.current_task() is first
            tasks[index] = first
            ctx.add_metadata(f"k{index}", "v")

        return callback

    registry = HookRegistry.from_plugins([stub_plugin("p", [make(i) for i in range(4)])])
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert [item.key for item in items] == ["k0", "k1", "k2", "k3"]
    assert all(h.stats.failures == 0 for h in registry.hooks_for(EVENT_MESSAGE_ENRICH))
    assert len(tasks) == 4


@pytest.mark.parametrize("event", MODES)
@pytest.mark.parametrize("hooks_count", [1, 2])
@pytest.mark.asyncio
async def test_execution_hook_timing_out_its_own_httpx_request_keeps_its_effect(event, hooks_count, http_server):
    handled = []
    hooks = []
    for index in range(hooks_count):

        @hook(event, name=f"impatient{index}", priority=index, timeout_ms=3000)
        async def impatient(ctx, index=index):
            try:
                async with asyncio.timeout(0.05):
                    async with httpx.AsyncClient(timeout=5) as client:
                        await client.get(http_server + "slow")
            except TimeoutError:
                handled.append(index)
            if event == EVENT_TOOL_BEFORE_CALL and index < hooks_count - 1:
                return
            apply_effect(ctx, f"k{index}")

        hooks.append(impatient)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    effects = await run_mode(event, registry)

    assert sorted(handled) == list(range(hooks_count))
    assert [s.last_error for s in stats_of(registry, event)] == [None] * hooks_count
    assert effects == expected_effects(event, hooks_count)
    assert asyncio.current_task().cancelling() == 0


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_short_cleanup_inside_a_hooks_own_timeout_is_allowed(event):
    cleaned = []

    @hook(event, name="tidy", timeout_ms=2000)
    async def tidy(ctx):
        try:
            async with asyncio.timeout(0.01):
                try:
                    await asyncio.sleep(1)
                finally:
                    await asyncio.sleep(0.02)  # closing a connection, say, while the cancellation is in flight
                    cleaned.append(1)
        except TimeoutError:
            pass
        apply_effect(ctx, "tidy")

    registry = HookRegistry.from_plugins([stub_plugin("p", [tidy])])

    assert await run_mode(event, registry) == 1
    assert cleaned == [1]
    assert [(s.failures, s.timeouts) for s in stats_of(registry, event)] == [(0, 0)]


@pytest.mark.parametrize("event", MODES)
@pytest.mark.asyncio
async def test_execution_endless_cleanup_after_its_own_timeout_fails_the_hook_not_the_caller(event):
    @hook(event, name="lingering", priority=1, timeout_ms=3000)
    async def lingering(ctx):
        try:
            async with asyncio.timeout(0.01):
                try:
                    await asyncio.sleep(1)
                finally:
                    await asyncio.sleep(2)
        except TimeoutError:
            pass
        apply_effect(ctx, "lingering")

    calls = []

    @hook(event, name="probe", priority=2)
    async def probe(ctx):
        calls.append(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [lingering, probe])])
    loop = asyncio.get_running_loop()
    start = loop.time()

    effects = await run_mode(event, registry)

    assert loop.time() - start < 1
    assert effects == 0
    assert calls == [1]
    lingering_stats = stats_of(registry, event)[0]
    assert (lingering_stats.failures, lingering_stats.timeouts) == (1, 0)
    assert "after a cancellation" in lingering_stats.last_error
    assert asyncio.current_task().cancelling() == 0
