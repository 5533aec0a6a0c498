"""Prometheus metrics of a running daemon, as a `prometheus_client` collector (served at `/metrics` by the
HTTP app, `mindroom.api`).

Hooks keep their last 512 durations and bots their last 1024 answer latencies. Each scrape moves the
samples that arrived since the previous one into cumulative histograms, so the histograms stay
monotonic across scrapes, reloads keep their counts, and nothing is added to the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from mindroom.hooks.registry import HookStats
from mindroom.hooks.telemetry import hook_telemetry
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.bots.runtime import BotMetrics
    from mindroom.daemon.reload import ReloadOutcome
    from mindroom.daemon.wiring import ApiCapabilities, RunningDaemon

__all__ = [
    "AGENT_LATENCY_BUCKETS_S",
    "CONTENT_TYPE",
    "HOOK_DURATION_BUCKETS_S",
    "Labels",
    "MetricsCollector",
]

logger = get_logger(__name__)

HOOK_DURATION_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0)
AGENT_LATENCY_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TOKEN_KINDS = ("input", "output", "cached")

Labels = tuple[tuple[str, str], ...]


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Histogram:
    """A cumulative histogram fed with batches of samples."""

    __slots__ = ("bounds", "buckets", "count", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.buckets = [0] * len(self.bounds)
        self.count = 0
        self.total = 0.0

    def observe(self, values: Iterable[float]) -> None:
        for value in values:
            self.count += 1
            self.total += value
            for index, bound in enumerate(self.bounds):
                if value <= bound:
                    self.buckets[index] += 1

    def add_to(self, family: HistogramMetricFamily, labels: Labels) -> None:
        buckets = [(_number(bound), float(count)) for bound, count in zip(self.bounds, self.buckets, strict=True)]
        buckets.append(("+Inf", float(self.count)))
        family.add_metric([value for _key, value in labels], buckets, self.total)


class _HookCursor:
    """Which of a hook's retained duration samples were already counted (by object identity)."""

    __slots__ = ("histogram", "last", "stats")

    def __init__(self, stats: HookStats) -> None:
        self.stats = stats
        self.last: float | None = None
        self.histogram = _Histogram(HOOK_DURATION_BUCKETS_S)

    def take_new(self) -> list[float]:
        samples = list(self.stats.durations_ms)
        start = 0
        if self.last is not None:
            for index in range(len(samples) - 1, -1, -1):
                if samples[index] is self.last:
                    start = index + 1
                    break
        if samples:
            self.last = samples[-1]
        return samples[start:]


class _AgentCursor:
    """Which of a bot's retained answer latencies were already counted (by the exact answer count)."""

    __slots__ = ("answers", "histogram", "metrics")

    def __init__(self, metrics: BotMetrics) -> None:
        self.metrics = metrics
        self.answers = 0
        self.histogram = _Histogram(AGENT_LATENCY_BUCKETS_S)

    def take_new(self) -> list[float]:
        fresh = self.metrics.answers - self.answers
        self.answers = self.metrics.answers
        samples = list(self.metrics.answer_latency_s)
        return samples[len(samples) - min(max(fresh, 0), len(samples)) :]


class MetricsCollector(Collector):
    """The running daemon as Prometheus metric families; `running` and `reloads` are asked anew at each scrape."""

    def __init__(
        self,
        running: Callable[[], RunningDaemon | ApiCapabilities | None],
        reloads: Callable[[], Iterable[ReloadOutcome]] = tuple,
    ) -> None:
        self._running = running
        self._reloads = reloads
        self._hooks: dict[tuple[str, str, str], _HookCursor] = {}
        self._agents: dict[str, _AgentCursor] = {}

    def render(self) -> str:
        """The whole exposition, one scrape (the text format)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return generate_latest(registry).decode()

    def collect(self) -> Iterator[Metric]:
        """Every family, one scrape."""
        running = self._running()
        yield _gauge("mindroom_up", "1 while the daemon runs and its bots are started.", [((), 1 if running else 0)])
        if running is None:
            return
        yield from self._hook_families(running)
        yield from self._agent_families(running)
        yield from _usage_families(running)
        applied, failed = _reload_counts(self._reloads())
        yield _counter(
            "mindroom_config_reloads_total",
            "Config and plugin reloads, by outcome.",
            [((("outcome", "applied"),), applied), ((("outcome", "failed"),), failed)],
        )
        yield _gauge("mindroom_plugins_loaded", "Plugins in the live registry.", [((), len(running.live.plugins))])
        yield _gauge(
            "mindroom_start_time_seconds",
            "When the daemon started (Unix time).",
            [((), running.clock.started_at_ms / 1000)],
        )
        yield from _process_families()

    def _hook_families(self, running: RunningDaemon | ApiCapabilities) -> Iterator[Metric]:
        registry = running.live.registry
        rows = hook_telemetry(registry)
        hooks = {hook.key: hook for hook in registry.all_hooks()}
        labelled = [(("plugin", r.plugin_name), ("hook", r.hook_name), ("event", r.event_name)) for r in rows]
        series = list(zip(labelled, rows, strict=True))
        yield _gauge("mindroom_hooks_registered", "Hooks in the live registry.", [((), len(rows))])
        for name, attribute, help_text in (
            ("mindroom_hook_calls_total", "calls", "Hook invocations."),
            ("mindroom_hook_failures_total", "failures", "Hook failures (errors and timeouts)."),
            ("mindroom_hook_timeouts_total", "timeouts", "Hooks cut off at their timeout."),
            ("mindroom_hook_declines_total", "declines", "Gate hooks that declined a tool call."),
            ("mindroom_hook_skipped_total", "skipped", "Calls skipped while the circuit breaker was open."),
            ("mindroom_hook_breaker_trips_total", "breaker_trips", "Times the circuit breaker opened."),
            ("mindroom_hook_blocked_loop_total", "blocked_loop", "Hook steps that held the event loop too long."),
            ("mindroom_hook_dropped_total", "dropped", "Background hook calls dropped (queue full, or at shutdown)."),
        ):
            yield _counter(name, help_text, [(labels, getattr(row, attribute)) for labels, row in series])
        yield _gauge(
            "mindroom_hook_breaker_open",
            "1 while the hook's circuit breaker is open.",
            [(labels, 1 if row.breaker_state == "open" else 0) for labels, row in series],
        )
        yield _counter(
            "mindroom_breaker_trips_total",
            "Circuit breaker trips over all hooks.",
            [((), sum(row.breaker_trips for row in rows))],
        )
        durations = HistogramMetricFamily(
            "mindroom_hook_duration_seconds", "How long hook calls took.", labels=["plugin", "hook", "event"]
        )
        for labels, row in series:
            key = (row.plugin_name, row.hook_name, row.event_name)
            hook = hooks.get(key)
            if hook is None:
                continue
            cursor = self._hooks.get(key)
            if cursor is None or cursor.stats is not hook.stats:
                cursor = self._hooks[key] = _HookCursor(hook.stats)
            cursor.histogram.observe(ms / 1000.0 for ms in cursor.take_new())
            cursor.histogram.add_to(durations, labels)
        yield durations

    def _agent_families(self, running: RunningDaemon | ApiCapabilities) -> Iterator[Metric]:
        bots = sorted(running.directory.entities.items())
        labelled = [((("agent", name),), bot) for name, bot in bots]
        yield _counter(
            "mindroom_agent_messages_handled_total",
            "Message events a bot took in.",
            [(labels, bot.metrics.messages_handled) for labels, bot in labelled],
        )
        yield _counter(
            "mindroom_agent_answers_total",
            "Answers a bot sent.",
            [(labels, bot.metrics.answers) for labels, bot in labelled],
        )
        yield _counter(
            "mindroom_model_tokens_total",
            "Tokens the agent's turns spent, by model and kind (cached input is counted in input too).",
            [
                ((("agent", labels[0][1]), ("model", model), ("kind", kind)), count)
                for labels, bot in labelled
                for model, counts in sorted(bot.metrics.tokens.items())
                for kind, count in zip(_TOKEN_KINDS, counts, strict=True)
            ],
        )
        yield _gauge(
            "mindroom_agent_in_flight",
            "Events being handled now.",
            [(labels, bot.in_flight) for labels, bot in labelled],
        )
        latency = HistogramMetricFamily(
            "mindroom_agent_answer_latency_seconds", "From routing to the sent answer.", labels=["agent"]
        )
        for labels, bot in labelled:
            name = labels[0][1]
            cursor = self._agents.get(name)
            if cursor is None or cursor.metrics is not bot.metrics:
                cursor = self._agents[name] = _AgentCursor(bot.metrics)
            cursor.histogram.observe(cursor.take_new())
            cursor.histogram.add_to(latency, labels)
        yield latency


def _usage_families(running: RunningDaemon | ApiCapabilities) -> Iterator[Metric]:
    """What turns cost by agent and model, and the turns budgets changed: never a label per person."""
    ledger = running.stores.usage
    if ledger is None:
        return
    yield _counter(
        "mindroom_usage_cost_usd_total",
        "USD the turns cost on priced models (models.*.pricing), by agent and model.",
        [((("agent", agent), ("model", model)), cost) for (agent, model), cost in sorted(ledger.cost_usd.items())],
    )
    yield _counter(
        "mindroom_budget_turns_total",
        "Turns a budget moved to its fallback model or refused, by outcome.",
        [((("outcome", outcome),), count) for outcome, count in sorted(ledger.budget_turns.items())],
    )


def _process_families() -> Iterator[Metric]:
    """Memory, descriptors and tasks of the daemon process: what a leak would make grow."""
    rss = _resident_bytes()
    if rss is not None:
        yield _gauge("mindroom_process_resident_memory_bytes", "Resident memory of the daemon.", [((), rss)])
    with contextlib.suppress(OSError):
        fds = len(os.listdir("/proc/self/fd"))
        yield _gauge("mindroom_process_open_fds", "Open file descriptors of the daemon.", [((), fds)])
    with contextlib.suppress(RuntimeError):  # rendered outside a loop (a test, a one-off render): no tasks to count
        tasks = len(asyncio.all_tasks())
        yield _gauge("mindroom_asyncio_tasks", "Tasks alive on the daemon's event loop.", [((), tasks)])


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _reload_counts(history: Iterable[ReloadOutcome]) -> tuple[int, int]:
    """(applied, failed) reloads."""
    outcomes = list(history)
    applied = sum(1 for outcome in outcomes if outcome.ok)
    return applied, len(outcomes) - applied


def _family(
    family: CounterMetricFamily | GaugeMetricFamily, samples: Iterable[tuple[Labels, float]]
) -> CounterMetricFamily | GaugeMetricFamily:
    for labels, value in samples:
        family.add_metric([value_ for _key, value_ in labels], float(value))
    return family


def _label_names(samples: list[tuple[Labels, float]]) -> list[str]:
    return [key for key, _value in samples[0][0]] if samples else []


def _counter(name: str, help_text: str, samples: Iterable[tuple[Labels, float]]) -> Metric:
    listed = list(samples)
    return _family(CounterMetricFamily(name, help_text, labels=_label_names(listed)), listed)


def _gauge(name: str, help_text: str, samples: Iterable[tuple[Labels, float]]) -> Metric:
    listed = list(samples)
    return _family(GaugeMetricFamily(name, help_text, labels=_label_names(listed)), listed)
