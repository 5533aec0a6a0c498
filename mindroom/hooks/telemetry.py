"""Per-hook telemetry as read-only rows, in pipeline order, and the plain-text table `!hooks` shows.

What `mindroom hooks list`, `!hooks` and the metrics endpoint show all comes from `hook_telemetry`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import mindroom.hooks.breaker as breaker
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.types import PIPELINE_ORDER, execution_mode

__all__ = ["HookTelemetry", "format_hook_rows", "hook_telemetry", "hooks_report_text", "ordered_telemetry"]

_RANK = {event: index for index, event in enumerate(PIPELINE_ORDER)}


@dataclass(frozen=True, slots=True)
class HookTelemetry:
    """One hook's configuration and counters at the moment it was read."""

    event_name: str
    execution_mode: str
    plugin_name: str
    hook_name: str
    priority: int
    timeout_ms: int
    agents: tuple[str, ...] | None
    rooms: tuple[str, ...] | None
    mode: str
    fail_closed: bool
    breaker_state: str
    calls: int
    failures: int
    timeouts: int
    declines: int
    blocked_loop: int
    skipped: int
    monitored_effects: int
    breaker_trips: int
    p50_ms: float | None
    p95_ms: float | None
    last_error: str | None
    background: bool = False
    dropped: int = 0
    """Background calls dropped (a full queue, or shutdown's grace ran out)."""


def _percentile(samples: list[float], fraction: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def hook_telemetry(registry: HookRegistry) -> list[HookTelemetry]:
    """Every hook of the registry, per event in execution order, with its counters and p50/p95 duration."""
    now = breaker.now()
    rows = []
    for hook in registry.all_hooks():
        stats = hook.stats
        samples = list(stats.durations_ms)
        rows.append(
            HookTelemetry(
                event_name=hook.event_name,
                execution_mode=execution_mode(hook.event_name).value,
                plugin_name=hook.plugin_name,
                hook_name=hook.hook_name,
                priority=hook.priority,
                timeout_ms=hook.timeout_ms,
                agents=tuple(sorted(hook.agents)) if hook.agents is not None else None,
                rooms=tuple(sorted(hook.rooms)) if hook.rooms is not None else None,
                mode=hook.mode,
                fail_closed=hook.fail_closed,
                breaker_state=stats.breaker.state(now),
                calls=stats.calls,
                failures=stats.failures,
                timeouts=stats.timeouts,
                declines=stats.declines,
                blocked_loop=stats.blocked_loop,
                skipped=stats.skipped,
                monitored_effects=stats.monitored_effects,
                breaker_trips=stats.breaker.trips,
                p50_ms=_percentile(samples, 0.5),
                p95_ms=_percentile(samples, 0.95),
                last_error=stats.last_error,
                background=hook.background,
                dropped=stats.dropped,
            )
        )
    return rows


def ordered_telemetry(rows: Iterable[HookTelemetry]) -> list[HookTelemetry]:
    """Rows per event in pipeline order (custom events last, by name); hooks keep their execution order."""
    return sorted(rows, key=lambda row: (_RANK.get(row.event_name, len(_RANK)), row.event_name))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_hook_rows(rows: Iterable[HookTelemetry]) -> str:
    """Plain text, one line per hook under a line per event, in the order given."""
    lines: list[str] = []
    event = None
    for row in rows:
        if row.event_name != event:
            event = row.event_name
            lines.append(f"{event} ({row.execution_mode})")
        filters = [f"agents={','.join(row.agents)}"] if row.agents is not None else []
        filters += [f"rooms={','.join(row.rooms)}"] if row.rooms is not None else []
        lines.append(
            f"  {row.plugin_name}:{row.hook_name} priority={row.priority} timeout={row.timeout_ms}ms"
            f" mode={row.mode}{' fail-closed' if row.fail_closed else ''}{' background' if row.background else ''}"
            f"{' ' + ' '.join(filters) if filters else ''} breaker={row.breaker_state}"
            f" calls={row.calls} failures={row.failures} timeouts={row.timeouts} declines={row.declines}"
            f"{f' dropped={row.dropped}' if row.background or row.dropped else ''} p95={_ms(row.p95_ms)}ms"
        )
    return "\n".join(lines) if lines else "No hooks are registered."


def hooks_report_text(registry: HookRegistry) -> str:
    """The plain-text hook table for `!hooks`: the rows of `mindroom hooks list`, in pipeline order."""
    return format_hook_rows(ordered_telemetry(hook_telemetry(registry)))
