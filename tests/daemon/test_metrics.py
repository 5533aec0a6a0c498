"""Prometheus metrics: exposition format, cumulative histograms across scrapes and reloads (served by `api`)."""

from __future__ import annotations

import asyncio
import re
import time
from types import SimpleNamespace

import pytest

from mindroom.bots.runtime import BotMetrics
from mindroom.config.plugin import PluginEntryConfig
from mindroom.daemon.metrics import HOOK_DURATION_BUCKETS_S, MetricsCollector
from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    HookRegistry,
    MessageEnrichContext,
    MessageReceivedContext,
    ResponseUsage,
    ToolAfterCallContext,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect

LINE = re.compile(r'^[a-z_]+(\{([a-z_]+="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|\+Inf|NaN)$')


@hook("message:enrich")
async def enrich(ctx):
    return None


@hook("tool:before_call", name='we"ird\\name')
async def gate(ctx):
    return None


def _plugin(name: str, callbacks):
    return SimpleNamespace(
        name=name, discovered_hooks=tuple(callbacks), entry_config=PluginEntryConfig(path=name), plugin_order=0
    )


def _registry(previous: HookRegistry | None = None) -> HookRegistry:
    return HookRegistry.from_plugins([_plugin("demo", [enrich, gate])], previous=previous)


def _running(registry: HookRegistry):
    """What the collector reads of a running daemon: the live registry and plugins, the bots, the run's start, and
    its stores (no usage ledger)."""
    bots = {"assistant": SimpleNamespace(metrics=BotMetrics(), in_flight=1)}
    live = SimpleNamespace(registry=registry, plugins=())
    directory = SimpleNamespace(entities=bots)
    clock = SimpleNamespace(started_at_ms=1_700_000_000_000)
    return SimpleNamespace(live=live, directory=directory, clock=clock, stores=SimpleNamespace(usage=None))


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")):
            found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
            if all(found.get(key) == value for key, value in labels.items()) and len(found) == len(labels):
                return float(line.rsplit(" ", 1)[1].replace("+Inf", "inf"))
    raise AssertionError(f"{name} {labels} not in output")


def _enrich_hook(registry: HookRegistry):
    return next(h for h in registry.all_hooks() if h.hook_name == "enrich")


def test_metrics_text_is_valid_exposition_format():
    registry = _registry()
    text = MetricsCollector(lambda: _running(registry)).render()

    for line in text.splitlines():
        assert line.startswith(("# HELP ", "# TYPE ")) or LINE.match(line), line
    assert 'hook="we\\"ird\\\\name"' in text
    assert _sample(text, "mindroom_up") == 1
    assert _sample(text, "mindroom_agent_in_flight", agent="assistant") == 1


def test_metrics_without_a_running_daemon_report_down():
    text = MetricsCollector(lambda: None).render()

    assert _sample(text, "mindroom_up") == 0
    assert "mindroom_hook" not in text


def test_hook_histogram_is_cumulative_across_scrapes_without_double_counting():
    registry = _registry()
    collector = MetricsCollector(lambda: _running(registry))
    stats = _enrich_hook(registry).stats
    labels = {"plugin": "demo", "hook": "enrich", "event": "message:enrich"}

    stats.calls, stats.failures, stats.timeouts = 3, 1, 1
    stats.durations_ms.extend([0.5, 20.0, 3000.0])
    first = collector.render()
    second = collector.render()
    stats.calls += 1
    stats.durations_ms.append(0.5)
    third = collector.render()

    assert _sample(first, "mindroom_hook_calls_total", **labels) == 3
    assert _sample(first, "mindroom_hook_failures_total", **labels) == 1
    assert _sample(first, "mindroom_hook_timeouts_total", **labels) == 1
    assert _sample(first, "mindroom_hook_duration_seconds_count", **labels) == 3
    assert _sample(second, "mindroom_hook_duration_seconds_count", **labels) == 3
    assert _sample(third, "mindroom_hook_duration_seconds_count", **labels) == 4
    assert _sample(third, "mindroom_hook_duration_seconds_bucket", le="0.001", **labels) == 2
    assert _sample(third, "mindroom_hook_duration_seconds_bucket", le="0.025", **labels) == 3
    assert _sample(third, "mindroom_hook_duration_seconds_bucket", le="+Inf", **labels) == 4
    assert _sample(third, "mindroom_hook_duration_seconds_sum", **labels) == pytest.approx(3.021)
    assert HOOK_DURATION_BUCKETS_S[0] == 0.001


def test_hook_histogram_survives_a_full_sample_window_and_a_reload():
    registry = _registry()
    current = {"registry": registry}
    collector = MetricsCollector(lambda: _running(current["registry"]))
    stats = _enrich_hook(registry).stats
    labels = {"plugin": "demo", "hook": "enrich", "event": "message:enrich"}

    stats.durations_ms.extend([1.0] * 10)
    collector.render()
    stats.durations_ms.extend([2.0] * 600)  # more than the 512 kept: the oldest are gone before the scrape
    after_flood = collector.render()
    current["registry"] = _registry(previous=registry)  # a reload hands the same stats to the new registry
    stats.durations_ms.append(3.0)
    after_reload = collector.render()

    assert _sample(after_flood, "mindroom_hook_duration_seconds_count", **labels) == 10 + 512
    assert _sample(after_reload, "mindroom_hook_duration_seconds_count", **labels) == 10 + 512 + 1


def test_agent_latency_histogram_counts_each_answer_once():
    registry = _registry()
    running = _running(registry)
    collector = MetricsCollector(lambda: running)
    metrics = running.directory.entities["assistant"].metrics
    metrics.messages_handled = 5
    metrics.record_answer(0.2)
    metrics.record_answer(4.0)

    first = collector.render()
    metrics.record_answer(0.05)
    second = collector.render()

    assert _sample(first, "mindroom_agent_messages_handled_total", agent="assistant") == 5
    assert _sample(first, "mindroom_agent_answers_total", agent="assistant") == 2
    assert _sample(second, "mindroom_agent_answer_latency_seconds_count", agent="assistant") == 3
    assert _sample(second, "mindroom_agent_answer_latency_seconds_bucket", le="0.1", agent="assistant") == 1
    assert _sample(second, "mindroom_agent_answer_latency_seconds_bucket", le="5", agent="assistant") == 3


def test_model_tokens_are_counted_per_agent_model_and_kind():
    registry = _registry()
    running = _running(registry)
    collector = MetricsCollector(lambda: running)
    before = collector.render()
    metrics = running.directory.entities["assistant"].metrics
    metrics.record_usage(ResponseUsage(100, 20, 60, "gpt-small"))
    metrics.record_usage(ResponseUsage(50, 5, 0, "gpt-small"))
    metrics.record_usage(ResponseUsage(7, 3, 1, "local-llama"))

    text = collector.render()

    assert "mindroom_model_tokens_total{" not in before  # no answer yet, no series
    for model, kind, value in [
        ("gpt-small", "input", 150),
        ("gpt-small", "output", 25),
        ("gpt-small", "cached", 60),
        ("local-llama", "input", 7),
        ("local-llama", "output", 3),
        ("local-llama", "cached", 1),
    ]:
        assert _sample(text, "mindroom_model_tokens_total", agent="assistant", model=model, kind=kind) == value
    assert "# TYPE mindroom_model_tokens_total counter" in text


def test_breaker_trips_and_reloads_are_reported():
    registry = _registry()
    hook_stats = _enrich_hook(registry).stats
    hook_stats.trips = 2
    history = [SimpleNamespace(ok=True), SimpleNamespace(ok=False), SimpleNamespace(ok=True)]
    text = MetricsCollector(lambda: _running(registry), lambda: history).render()

    assert _sample(text, "mindroom_breaker_trips_total") == 2
    assert _sample(text, "mindroom_hook_breaker_trips_total", plugin="demo", hook="enrich", event="message:enrich") == 2
    assert _sample(text, "mindroom_config_reloads_total", outcome="applied") == 2
    assert _sample(text, "mindroom_config_reloads_total", outcome="failed") == 1
    assert (
        _sample(
            MetricsCollector(lambda: _running(registry)).render(), "mindroom_config_reloads_total", outcome="applied"
        )
        == 0
    )


@hook("message:received")
async def blocker(ctx):
    time.sleep(0.05)  # blocking code in an async hook: every other turn waits meanwhile


@pytest.mark.asyncio
async def test_hook_that_blocks_the_event_loop_is_counted_in_metrics():
    registry = HookRegistry.from_plugins([_plugin("demo", [enrich, blocker])], blocking_threshold_ms=20)
    collector = MetricsCollector(lambda: _running(registry))
    labels = {"plugin": "demo", "hook": "blocker", "event": "message:received"}
    assert _sample(collector.render(), "mindroom_hook_blocked_loop_total", **labels) == 0

    for _ in range(2):
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext())

    text = collector.render()
    assert _sample(text, "mindroom_hook_blocked_loop_total", **labels) == 2
    assert _sample(text, "mindroom_hook_blocked_loop_total", plugin="demo", hook="enrich", event="message:enrich") == 0
    assert "# TYPE mindroom_hook_blocked_loop_total counter" in text


@pytest.mark.asyncio
async def test_background_hook_calls_dropped_on_a_full_queue_are_counted_in_metrics():
    release = asyncio.Event()

    @hook("tool:after_call", background=True)
    async def audit(ctx):
        await release.wait()

    registry = HookRegistry.from_plugins([_plugin("demo", [audit])])
    registry.background.size = 1
    collector = MetricsCollector(lambda: _running(registry))
    labels = {"plugin": "demo", "hook": "audit", "event": "tool:after_call"}
    for _ in range(3):
        await emit(registry, "tool:after_call", ToolAfterCallContext(tool_name="shell"))

    text = collector.render()
    assert _sample(text, "mindroom_hook_dropped_total", **labels) == 2
    assert "# TYPE mindroom_hook_dropped_total counter" in text
    release.set()
    await registry.background.drain(5.0)


@pytest.mark.asyncio
async def test_metrics_report_memory_descriptors_and_tasks_of_the_process():
    text = MetricsCollector(lambda: _running(_registry())).render()

    assert _sample(text, "mindroom_process_resident_memory_bytes") > 10_000_000
    assert _sample(text, "mindroom_process_open_fds") >= 3
    assert _sample(text, "mindroom_asyncio_tasks") >= 1  # this test's own task
