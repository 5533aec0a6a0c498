"""The `state` phase: the data directory made private, the state's lock taken, agents' workspaces of an older layout
moved into place, its stores opened; and released.

The state is the caller's when it passes one (already locked: `mindroom run` takes the lock before it
starts the homeserver), or one this holder opens from the environment and the config, and closes itself.
"""

from __future__ import annotations

import asyncio

from mindroom.config.environment import DaemonEnvironment
from mindroom.config.main import Config
from mindroom.daemon.standby import daemon_state
from mindroom.daemon.startup.plan import PhaseStops
from mindroom.private_files import private_dir, warn_if_shared
from mindroom.state.backend import StateBackend, StateStores
from mindroom.tool_system.workspace_layout import move_old_workspaces

__all__ = ["StateHolder"]


class StateHolder:
    """The daemon's state backend and, while a run holds it, its stores."""

    __slots__ = ("_environment", "_owned", "backend", "stores")

    def __init__(self, environment: DaemonEnvironment, given: StateBackend | None = None) -> None:
        """`given`: the caller's state, left open on release; else one is opened (and closed) here."""
        self._environment = environment
        self._owned = given is None
        self.backend = given
        self.stores: StateStores | None = None
        """The open stores (None until opened, and once released: no bot made after that gets them)."""

    @property
    def postgresql(self) -> bool:
        """True when the state is in PostgreSQL."""
        return self.backend is not None and self.backend.kind == "postgresql"

    async def open(self, config: Config, stops: PhaseStops) -> StateStores:
        """The stores, under the state's lock (taken here unless the caller did); registers the release."""
        storage_root = self._environment.storage_root
        warn_if_shared(storage_root)
        private_dir(storage_root)
        if self.backend is None:
            self.backend = daemon_state(self._environment, config)
        # Registered before the lock is asked: a start refused there still closes what it opened.
        stops.add("state", lambda _: self.release())
        if not self.backend.locked:
            await self.backend.acquire()
        # Under the lock: no other daemon moves the same folders.
        await asyncio.to_thread(move_old_workspaces, storage_root)
        self.stores = await self.backend.open_stores()
        return self.stores

    async def release(self) -> None:
        """Stop handing out the stores; close the state if this holder opened it itself."""
        self.stores = None
        if self.backend is not None and self._owned:
            await self.backend.close()
            self.backend = None
