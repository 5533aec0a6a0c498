"""`emit_collect` (collector mode): concurrent hooks, bounded at 10, isolated items merged in hook order."""

import asyncio

import pytest

from mindroom.hooks import EVENT_MESSAGE_ENRICH, EnrichmentItem, HookRegistry, MessageEnrichContext, hook
from mindroom.hooks.execution import COLLECTOR_CONCURRENCY, emit_collect
from tests.hooks.support import stub_plugin


def keys(items):
    return [item.key for item in items]


class Gauge:
    """Counts hooks running at once."""

    def __init__(self):
        self.active = 0
        self.peak = 0
        self.started = 0

    async def run(self, seconds):
        self.active += 1
        self.started += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.active -= 1


def gauge_hooks(gauge, count, seconds=0.02):
    hooks = []
    for index in range(count):

        @hook(EVENT_MESSAGE_ENRICH, name=f"h{index:02d}")
        async def callback(ctx, index=index):
            await gauge.run(seconds)
            ctx.add_metadata(f"k{index:02d}", "text")

        hooks.append(callback)
    return hooks


@pytest.mark.asyncio
async def test_emit_collect_bounded_semaphore_is_ten():
    assert COLLECTOR_CONCURRENCY == 10
    gauge = Gauge()
    registry = HookRegistry.from_plugins([stub_plugin("p", gauge_hooks(gauge, 25))])

    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert gauge.started == 25
    assert gauge.peak == 10
    assert keys(items) == [f"k{index:02d}" for index in range(25)]


@pytest.mark.asyncio
async def test_emit_collect_runs_all_at_once_when_ten_or_fewer():
    gauge = Gauge()
    registry = HookRegistry.from_plugins([stub_plugin("p", gauge_hooks(gauge, 6))])

    await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert gauge.peak == 6


@pytest.mark.asyncio
async def test_emit_collect_never_exceeds_ten_with_mixed_durations():
    gauge = Gauge()
    hooks = []
    for index in range(30):

        @hook(EVENT_MESSAGE_ENRICH, name=f"h{index}")
        async def callback(ctx, index=index):
            await gauge.run(0.001 * (index % 7))

        hooks.append(callback)
    registry = HookRegistry.from_plugins([stub_plugin("p", hooks)])

    await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert gauge.started == 30
    assert gauge.peak == 10


@pytest.mark.asyncio
async def test_emit_collect_latency_is_max_not_sum():
    gauge = Gauge()
    registry = HookRegistry.from_plugins([stub_plugin("p", gauge_hooks(gauge, 5, seconds=0.1))])

    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert gauge.peak == 5  # all at once: the wait is the longest hook's, not the sum of them
    assert len(items) == 5


@pytest.mark.asyncio
async def test_emit_collect_merges_in_hook_order_even_when_finishing_in_reverse():
    finished = []
    hooks = []
    for index in range(4):

        @hook(EVENT_MESSAGE_ENRICH, name=f"h{index}", priority=index)
        async def callback(ctx, index=index):
            await asyncio.sleep(0.01 * (4 - index))
            finished.append(index)
            ctx.add_metadata(f"k{index}", f"text {index}")

        hooks.append(callback)
    registry = HookRegistry.from_plugins([stub_plugin("p", list(reversed(hooks)))])

    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert finished == [3, 2, 1, 0]
    assert keys(items) == ["k0", "k1", "k2", "k3"]


@pytest.mark.asyncio
async def test_emit_collect_failing_hook_loses_only_its_items():
    @hook(EVENT_MESSAGE_ENRICH, priority=1)
    async def good_before(ctx):
        ctx.add_metadata("before", "kept")

    @hook(EVENT_MESSAGE_ENRICH, priority=2)
    async def adds_then_fails(ctx):
        ctx.add_metadata("lost-1", "gone")
        await asyncio.sleep(0)
        ctx.add_metadata("lost-2", "gone")
        raise RuntimeError("boom")

    @hook(EVENT_MESSAGE_ENRICH, priority=3)
    async def adds_then_fails_sync(ctx):
        ctx.add_metadata("lost-3", "gone")
        raise RuntimeError("boom")

    @hook(EVENT_MESSAGE_ENRICH, priority=4)
    async def good_after(ctx):
        await asyncio.sleep(0)
        ctx.add_metadata("after", "kept")

    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [good_before, adds_then_fails, adds_then_fails_sync, good_after])]
    )
    ctx = MessageEnrichContext()
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, ctx)

    assert keys(items) == ["before", "after"]
    assert keys(ctx.items) == ["before", "after"]
    stats = {h.hook_name: h.stats.failures for h in registry.hooks_for(EVENT_MESSAGE_ENRICH)}
    assert stats == {"good_before": 0, "adds_then_fails": 1, "adds_then_fails_sync": 1, "good_after": 0}


@pytest.mark.asyncio
async def test_emit_collect_timed_out_hook_loses_only_its_items():
    @hook(EVENT_MESSAGE_ENRICH, priority=1, timeout_ms=30)
    async def slow(ctx):
        ctx.add_metadata("slow", "never")
        await asyncio.sleep(5)

    @hook(EVENT_MESSAGE_ENRICH, priority=2)
    async def fast(ctx):
        ctx.add_metadata("fast", "kept")

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow, fast])])
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert keys(items) == ["fast"]
    assert registry.hooks_for(EVENT_MESSAGE_ENRICH)[0].stats.timeouts == 1


@pytest.mark.asyncio
async def test_emit_collect_hooks_see_isolated_item_lists():
    seen = []

    @hook(EVENT_MESSAGE_ENRICH, priority=1)
    async def first(ctx):
        ctx.add_metadata("first", "x")
        await asyncio.sleep(0.01)
        seen.append(("first", keys(ctx.items)))

    @hook(EVENT_MESSAGE_ENRICH, priority=2)
    async def second(ctx):
        seen.append(("second", keys(ctx.items)))
        ctx.add_metadata("second", "y")

    registry = HookRegistry.from_plugins([stub_plugin("p", [first, second])])
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert sorted(seen) == [("first", ["first"]), ("second", [])]


@pytest.mark.asyncio
async def test_emit_collect_binds_each_hooks_own_plugin_and_settings():
    seen = {}

    @hook(EVENT_MESSAGE_ENRICH)
    async def one(ctx):
        await asyncio.sleep(0.01)
        seen["one"] = (ctx.plugin_name, ctx.settings.get("api_key"))

    @hook(EVENT_MESSAGE_ENRICH)
    async def two(ctx):
        await asyncio.sleep(0.005)
        seen["two"] = (ctx.plugin_name, ctx.settings.get("api_key"))

    registry = HookRegistry.from_plugins(
        [stub_plugin("a", [one], settings={"api_key": "A"}), stub_plugin("b", [two], settings={"api_key": "B"})]
    )
    ctx = MessageEnrichContext()
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, ctx)

    assert seen == {"one": ("a", "A"), "two": ("b", "B")}


@pytest.mark.asyncio
async def test_emit_collect_returned_item_list_and_none_all_work():
    @hook(EVENT_MESSAGE_ENRICH, priority=1)
    async def returns_item(ctx):
        return EnrichmentItem(key="single", text="one")

    @hook(EVENT_MESSAGE_ENRICH, priority=2)
    async def returns_list(ctx):
        await asyncio.sleep(0)
        return [EnrichmentItem(key="l1", text="a"), EnrichmentItem(key="l2", text="b", cache_policy="stable")]

    @hook(EVENT_MESSAGE_ENRICH, priority=3)
    async def returns_tuple(ctx):
        return (EnrichmentItem(key="t1", text="t"),)

    @hook(EVENT_MESSAGE_ENRICH, priority=4)
    async def returns_none(ctx):
        return None

    @hook(EVENT_MESSAGE_ENRICH, priority=5)
    async def returns_empty(ctx):
        return []

    @hook(EVENT_MESSAGE_ENRICH, priority=6)
    async def adds_and_returns(ctx):
        ctx.add_metadata("added", "first")
        return EnrichmentItem(key="returned", text="second")

    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [returns_item, returns_list, returns_tuple, returns_none, returns_empty, adds_and_returns])]
    )
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert keys(items) == ["single", "l1", "l2", "t1", "added", "returned"]
    assert items[2].cache_policy == "stable"
    assert all(h.stats.failures == 0 for h in registry.hooks_for(EVENT_MESSAGE_ENRICH))


@pytest.mark.parametrize(
    "garbage", ["a string", {"key": "dict"}, 42, [EnrichmentItem(key="ok", text="x"), "bad"], b"x"]
)
@pytest.mark.asyncio
async def test_emit_collect_garbage_return_loses_only_that_hooks_items(garbage):
    @hook(EVENT_MESSAGE_ENRICH, priority=1)
    async def garbage_hook(ctx):
        ctx.add_metadata("lost", "gone")
        return garbage

    @hook(EVENT_MESSAGE_ENRICH, priority=2)
    async def good(ctx):
        ctx.add_metadata("kept", "yes")

    registry = HookRegistry.from_plugins([stub_plugin("p", [garbage_hook, good])])
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert keys(items) == ["kept"]
    bad = registry.hooks_for(EVENT_MESSAGE_ENRICH)[0]
    assert bad.stats.failures == 1
    assert bad.stats.last_error is not None


@pytest.mark.asyncio
async def test_emit_collect_no_hooks_returns_empty_list():
    assert await emit_collect(HookRegistry.empty(), EVENT_MESSAGE_ENRICH, MessageEnrichContext()) == []


@pytest.mark.asyncio
async def test_emit_collect_failing_hook_called_exactly_once():
    calls = []

    @hook(EVENT_MESSAGE_ENRICH)
    async def broken(ctx):
        calls.append(1)
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    registry = HookRegistry.from_plugins([stub_plugin("p", [broken])])
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert calls == [1]


@pytest.mark.asyncio
async def test_emit_collect_waiting_hooks_are_not_charged_for_the_wait():
    """A hook queued behind the semaphore gets its full timeout once it starts."""
    gauge = Gauge()
    hooks = gauge_hooks(gauge, 10, seconds=0.06)

    @hook(EVENT_MESSAGE_ENRICH, name="queued", timeout_ms=50)
    async def queued(ctx):
        await asyncio.sleep(0.01)
        ctx.add_metadata("queued", "ran")

    registry = HookRegistry.from_plugins([stub_plugin("p", [*hooks, queued])])
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    assert "queued" in keys(items)


@pytest.mark.asyncio
async def test_emit_collect_caller_cancellation_propagates_and_stops_hooks():
    finished = []

    @hook(EVENT_MESSAGE_ENRICH, timeout_ms=5000)
    async def slow(ctx):
        await asyncio.sleep(1)
        finished.append(1)

    registry = HookRegistry.from_plugins([stub_plugin("p", [slow])])
    task = asyncio.ensure_future(emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext()))
    await asyncio.sleep(0.02)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert finished == []
    assert registry.hooks_for(EVENT_MESSAGE_ENRICH)[0].stats.failures == 0
