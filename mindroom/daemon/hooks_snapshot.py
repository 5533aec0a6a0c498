"""The hook table for operators: pipeline order, and the snapshot file a running daemon keeps for the CLI.

`mindroom hooks list` runs in another process than the daemon, so it cannot read live counters. The
daemon writes `<data>/state/hooks.json` every few seconds and once more when it stops; the CLI shows
those counters when the file belongs to a running daemon (and says so), else the config's hooks at zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.telemetry import HookTelemetry, hook_telemetry
from mindroom.hooks.types import (
    EVENT_AGENT_STARTED,
    EVENT_AGENT_STOPPED,
    EVENT_BOT_READY,
    EVENT_CONFIG_RELOADED,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_REACTION_RECEIVED,
    EVENT_SCHEDULE_FIRED,
    EVENT_TOOL_AFTER_CALL,
    EVENT_TOOL_BEFORE_CALL,
)
from mindroom.logging_config import get_logger
from mindroom.private_files import write_private_file

__all__ = [
    "EVENT_ORDER",
    "SNAPSHOT_INTERVAL_S",
    "HooksSnapshot",
    "format_hook_rows",
    "hooks_report_text",
    "hooks_table",
    "ordered_telemetry",
    "read_hooks_snapshot",
    "snapshot_path",
    "write_hooks_snapshot",
    "write_snapshots_until_cancelled",
]

logger = get_logger(__name__)

SNAPSHOT_INTERVAL_S = 5.0
_FRESH_FOR_S = 60.0

EVENT_ORDER: tuple[str, ...] = (
    EVENT_MESSAGE_RECEIVED,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_AGENT_STARTED,
    EVENT_BOT_READY,
    EVENT_AGENT_STOPPED,
    EVENT_CONFIG_RELOADED,
    EVENT_SCHEDULE_FIRED,
    EVENT_REACTION_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    EVENT_TOOL_AFTER_CALL,
)
"""Built-in events in the order a message meets them, then lifecycle, schedule, reaction and tool events."""

_RANK = {event: index for index, event in enumerate(EVENT_ORDER)}


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
            f" mode={row.mode}{' fail-closed' if row.fail_closed else ''}"
            f"{' ' + ' '.join(filters) if filters else ''} breaker={row.breaker_state}"
            f" calls={row.calls} failures={row.failures} timeouts={row.timeouts} declines={row.declines}"
            f" p95={_ms(row.p95_ms)}ms"
        )
    return "\n".join(lines) if lines else "No hooks are registered."


def hooks_report_text(registry: HookRegistry) -> str:
    """The plain-text hook table for `!hooks`: the rows of `mindroom hooks list`, in pipeline order."""
    return format_hook_rows(ordered_telemetry(hook_telemetry(registry)))


def snapshot_path(storage_root: Path) -> Path:
    """`<data>/state/hooks.json`."""
    return storage_root / "state" / "hooks.json"


@dataclass(frozen=True, slots=True)
class HooksSnapshot:
    """Hook counters as a daemon last wrote them."""

    pid: int
    written_at: float
    running: bool
    rows: tuple[HookTelemetry, ...]

    @property
    def age_s(self) -> float:
        """Seconds since it was written."""
        return max(0.0, time.time() - self.written_at)

    @property
    def is_live(self) -> bool:
        """True when the daemon that wrote it is still running and writing."""
        if not self.running or self.age_s > _FRESH_FOR_S:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _snapshot_text(registry: HookRegistry, *, running: bool) -> str:
    rows = [dataclasses.asdict(row) for row in ordered_telemetry(hook_telemetry(registry))]
    payload = {"pid": os.getpid(), "written_at": time.time(), "running": running, "hooks": rows}
    return json.dumps(payload, indent=1) + "\n"


def write_hooks_snapshot(path: Path, registry: HookRegistry, *, running: bool) -> None:
    """Write the registry's telemetry atomically (mode 0600; no fsync: a lost snapshot is rewritten in 5 s)."""
    write_private_file(path, _snapshot_text(registry, running=running), durable=False)


def _row(data: dict[str, Any]) -> HookTelemetry:
    names = {f.name for f in dataclasses.fields(HookTelemetry)}
    values = {key: value for key, value in data.items() if key in names}
    for key in ("agents", "rooms"):
        if isinstance(values.get(key), list):
            values[key] = tuple(values[key])
    return HookTelemetry(**values)


def read_hooks_snapshot(path: Path) -> HooksSnapshot | None:
    """The snapshot at `path`, or None when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return HooksSnapshot(
            pid=int(data["pid"]),
            written_at=float(data["written_at"]),
            running=bool(data["running"]),
            rows=tuple(_row(row) for row in data["hooks"]),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("hook snapshot unreadable", path=str(path), error=str(exc))
        return None


async def write_snapshots_until_cancelled(
    path: Path, registry: Callable[[], HookRegistry | None], interval_s: float = SNAPSHOT_INTERVAL_S
) -> None:
    """Write a snapshot every `interval_s`, and a final one (`running: false`) when cancelled."""
    try:
        while True:
            current = registry()
            if current is not None:
                # Written on the loop (a small file, no fsync): no write can still be in flight when the
                # final `running: false` snapshot is written on cancellation.
                write_hooks_snapshot(path, current, running=True)
            await asyncio.sleep(interval_s)
    finally:
        current = registry()
        if current is not None:
            with contextlib.suppress(OSError):
                write_hooks_snapshot(path, current, running=False)


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
