"""The snapshot file a running daemon keeps of its hook counters, for `mindroom hooks list`.

`mindroom hooks list` runs in another process than the daemon, so it cannot read live counters. The
daemon writes the snapshot `hooks` of its state every few seconds and once more when it stops: the file
`<data>/state/hooks.json` on SQLite, a row of `mindroom.snapshots` on PostgreSQL (readable from any
machine). The CLI shows those counters when the snapshot belongs to a running daemon (and says so),
else the config's hooks at zero.
A hook's `last_error` is an exception text, which can hold a token: it is redacted on the way into the
file and again on the way out (a file an older daemon wrote may still hold one).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindroom.config.environment import DaemonEnvironment
from mindroom.config.loading import load_config
from mindroom.errors import ConfigError
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.telemetry import HookTelemetry, hook_telemetry, ordered_telemetry
from mindroom.logging_config import get_logger, redact_text, redact_value
from mindroom.private_files import write_private_file
from mindroom.state.errors import StateError
from mindroom.state.location import read_state_snapshot
from mindroom.state.snapshots import SnapshotStore

__all__ = [
    "SNAPSHOT_INTERVAL_S",
    "SNAPSHOT_NAME",
    "HooksSnapshot",
    "hooks_snapshot_text",
    "parse_hooks_snapshot",
    "read_hooks_snapshot",
    "read_state_hooks_snapshot",
    "snapshot_path",
    "write_hooks_snapshot",
    "write_snapshots_until_cancelled",
]

logger = get_logger(__name__)

SNAPSHOT_INTERVAL_S = 5.0
SNAPSHOT_NAME = "hooks"
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
    host: str | None = None

    @property
    def age_s(self) -> float:
        """Seconds since it was written."""
        return max(0.0, time.time() - self.written_at)

    @property
    def is_live(self) -> bool:
        """True when the daemon that wrote it is still running and writing."""
        if not self.running or self.age_s > _FRESH_FOR_S:
            return False
        if self.host is not None and self.host != socket.gethostname():
            return True  # another machine's daemon (state in PostgreSQL): fresh is all that can be told
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def hooks_snapshot_text(registry: HookRegistry, *, running: bool) -> str:
    """The registry's telemetry as a snapshot (exception texts redacted)."""
    # Only an error's text is free text; the other fields are names and counters (redacting every string of
    # every row each 5 s was a measurable share of an idle daemon's CPU).
    rows = [
        dataclasses.asdict(dataclasses.replace(row, last_error=redact_text(row.last_error)))
        if row.last_error
        else dataclasses.asdict(row)
        for row in ordered_telemetry(hook_telemetry(registry))
    ]
    payload = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "written_at": time.time(),
        "running": running,
        "hooks": rows,
    }
    return json.dumps(payload, indent=1) + "\n"


def write_hooks_snapshot(path: Path, registry: HookRegistry, *, running: bool) -> None:
    """Write the registry's telemetry atomically (mode 0600; no fsync: a lost snapshot is rewritten in 5 s)."""
    write_private_file(path, hooks_snapshot_text(registry, running=running), durable=False)


def _row(data: dict[str, Any]) -> HookTelemetry:
    names = {f.name for f in dataclasses.fields(HookTelemetry)}
    values = {key: redact_value(value) for key, value in data.items() if key in names}
    for key in ("agents", "rooms"):
        if isinstance(values.get(key), list):
            values[key] = tuple(values[key])
    return HookTelemetry(**values)


def parse_hooks_snapshot(text: str | None, where: str) -> HooksSnapshot | None:
    """The snapshot in `text`, or None when there is none or it cannot be read (`where` names it in the log)."""
    if text is None:
        return None
    try:
        data = json.loads(text)
        host = data.get("host")
        return HooksSnapshot(
            pid=int(data["pid"]),
            written_at=float(data["written_at"]),
            running=bool(data["running"]),
            rows=tuple(_row(row) for row in data["hooks"]),
            host=host if isinstance(host, str) else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        logger.warning("hook snapshot unreadable", path=where, error=str(exc))
        return None


def read_hooks_snapshot(path: Path) -> HooksSnapshot | None:
    """The snapshot at `path`, or None when there is none or it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("hook snapshot unreadable", path=str(path), error=str(exc))
        return None
    return parse_hooks_snapshot(text, str(path))


def read_state_hooks_snapshot(environment: DaemonEnvironment) -> HooksSnapshot | None:
    """The hook counters the daemon of this data directory (or its database) last wrote, if any."""
    url = environment.database_url
    if url is None:
        try:
            url = load_config(environment.config_path, environment.values).storage.database_url
        except ConfigError:
            url = None
    try:
        text = read_state_snapshot(environment.storage_root, url, SNAPSHOT_NAME)
    except StateError as exc:
        logger.warning("hook snapshot unreadable", error=str(exc))
        return None
    return parse_hooks_snapshot(text, SNAPSHOT_NAME)


class _OneFile:
    """A snapshot file at a given path (the form callers that know only a path hand over)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, name: str, text: str) -> None:
        write_private_file(self.path, text, durable=False)

    def read(self, name: str) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None


async def write_snapshots_until_cancelled(
    target: SnapshotStore | Path,
    registry: Callable[[], HookRegistry | None],
    interval_s: float = SNAPSHOT_INTERVAL_S,
) -> None:
    """Write a snapshot every `interval_s` to the state's store (or a file), and a final one (`running: false`)
    when cancelled."""
    store: SnapshotStore = _OneFile(target) if isinstance(target, Path) else target
    try:
        while True:
            current = registry()
            if current is not None:
                # Written on the loop (a small file without fsync, or a queued database write): no write can
                # still be in flight when the final `running: false` snapshot is written on cancellation.
                store.write(SNAPSHOT_NAME, hooks_snapshot_text(current, running=True))
            await asyncio.sleep(interval_s)
    finally:
        current = registry()
        if current is not None:
            with contextlib.suppress(OSError):
                store.write(SNAPSHOT_NAME, hooks_snapshot_text(current, running=False))
