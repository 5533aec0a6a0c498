"""What the HTTP app reads of the daemon (`DaemonView`: the current run's declared `ApiCapabilities`, never the
whole run), and what it keeps itself."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mindroom.api.limits import RateLimiter
from mindroom.api.settings import ApiSettings
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.daemon.wiring import ApiCapabilities
from mindroom.tasks import TaskOwner

__all__ = ["ApiContext", "DaemonView"]


class DaemonView(Protocol):
    """The daemon as the HTTP app sees it (`mindroom.daemon.wiring.DaemonApiView` over the orchestrator)."""

    @property
    def running(self) -> ApiCapabilities | None:
        """What the app may use of the current run (None while it starts or is stopped)."""

    @property
    def reloader(self) -> ReloadCoordinator | None:
        """The reload coordinator of the current run."""

    @property
    def config_path(self) -> Path:
        """The config file the daemon runs."""


@dataclass(frozen=True, slots=True, eq=False)
class ApiContext:
    """The daemon, the settings, and the app's own state: its turns, its rate limits, its start."""

    daemon: DaemonView
    settings: ApiSettings
    turns: TaskOwner = field(default_factory=lambda: TaskOwner("api"))
    """`/v1` turns: each outlives its request until stored, and all are cancelled when the server stops."""
    started_at: float = field(default_factory=time.time)
    v1_limiter: RateLimiter = field(init=False)
    api_limiter: RateLimiter = field(init=False)
    turn_slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        object.__setattr__(self, "v1_limiter", RateLimiter(settings.completions_per_minute))
        object.__setattr__(self, "api_limiter", RateLimiter(settings.rate_per_minute))
        object.__setattr__(self, "turn_slots", asyncio.Semaphore(settings.max_turns))
