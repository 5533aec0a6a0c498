"""Who holds a state's lock: host, pid and since when, kept beside the lock so a refused daemon can name it."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["LockHolder"]


@dataclass(frozen=True, slots=True)
class LockHolder:
    """The daemon holding a state's lock."""

    host: str
    pid: int
    since: float

    @classmethod
    def this_process(cls) -> LockHolder:
        """The running process, from now."""
        return cls(host=socket.gethostname(), pid=os.getpid(), since=time.time())

    def describe(self) -> str:
        """`host web1, pid 4242, since 2025-01-31 12:00:00 UTC`."""
        since = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"host {self.host}, pid {self.pid}, since {since}"

    def to_json(self) -> str:
        """The form kept in a lock file."""
        return json.dumps({"host": self.host, "pid": self.pid, "since": self.since}) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LockHolder | None:
        """Parse `to_json`'s form; None when `text` is not one (an empty or foreign lock file)."""
        try:
            data = json.loads(text)
            return cls(host=str(data["host"]), pid=int(data["pid"]), since=float(data["since"]))
        except (ValueError, KeyError, TypeError):
            return None
