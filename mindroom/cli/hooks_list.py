"""The rich table `mindroom hooks list` prints."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from mindroom.hooks.telemetry import HookTelemetry

__all__ = ["hooks_table"]


def hooks_table(rows: Iterable[HookTelemetry]) -> Table:
    """The rich table `mindroom hooks list` prints: one row per hook, the event named on its first row."""
    table = Table(
        "event", "plugin", "hook", "priority", "timeout", "filters", "mode", "breaker", "calls", "failures", "p95",
        box=None, pad_edge=False,
    )  # fmt: skip
    event = None
    for row in rows:
        filters = [f"agents={','.join(row.agents)}"] if row.agents is not None else []
        filters += [f"rooms={','.join(row.rooms)}"] if row.rooms is not None else []
        breaker_style = {"open": "red", "half-open": "yellow"}.get(row.breaker_state, "green")
        table.add_row(
            f"{row.event_name} ({row.execution_mode})" if row.event_name != event else "",
            row.plugin_name,
            row.hook_name,
            str(row.priority),
            f"{row.timeout_ms} ms",
            " ".join(filters) or "-",
            row.mode + (" fail-closed" if row.fail_closed else ""),
            Text(row.breaker_state, style=breaker_style),
            str(row.calls),
            Text(str(row.failures), style="red" if row.failures else ""),
            "-" if row.p95_ms is None else f"{row.p95_ms:.1f} ms",
        )
        event = row.event_name
    return table
