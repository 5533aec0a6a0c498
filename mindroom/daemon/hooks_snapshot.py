"""The snapshot file a running daemon keeps of its hook counters, for `mindroom hooks list`.

`mindroom hooks list` runs in another process than the daemon, so it cannot read live counters. The
daemon writes `<data>/state/hooks.json` every few seconds and once more when it stops; the CLI shows
those counters when the file belongs to a running daemon (and says so), else the config's hooks at zero.
A hook's `last_error` is an exception text, which can hold a token: it is redacted on the way into the
file and again on the way out (a file an older daemon wrote may still hold one).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.telemetry import HookTelemetry, hook_telemetry, ordered_telemetry
from mindroom.logging_config import get_logger, redact_value
from mindroom.private_files import write_private_file

__all__ = [
    "SNAPSHOT_INTERVAL_S",
    "HooksSnapshot",
    "read_hooks_snapshot",
    "snapshot_path",
    "write_hooks_snapshot",
    "write_snapshots_until_cancelled",
]

logger = get_logger(__name__)

SNAPSHOT_INTERVAL_S = 5.0
_FRESH_FOR_S = 60.0


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
    rows = redact_value([dataclasses.asdict(row) for row in ordered_telemetry(hook_telemetry(registry))])
    payload = {"pid": os.getpid(), "written_at": time.time(), "running": running, "hooks": rows}
    return json.dumps(payload, indent=1) + "\n"


def write_hooks_snapshot(path: Path, registry: HookRegistry, *, running: bool) -> None:
    """Write the registry's telemetry atomically (mode 0600; no fsync: a lost snapshot is rewritten in 5 s)."""
    write_private_file(path, _snapshot_text(registry, running=running), durable=False)


def _row(data: dict[str, Any]) -> HookTelemetry:
    names = {f.name for f in dataclasses.fields(HookTelemetry)}
    values = {key: redact_value(value) for key, value in data.items() if key in names}
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
