"""The services every bot shares: current config and hook registry, state, coordination, room facts."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindroom.bots.coordination import TurnCoordinator
from mindroom.config.main import Config
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.hooks.registry import HookRegistry
from mindroom.state.journal import DaemonState
from mindroom.tool_system.registry import ToolCatalog

if TYPE_CHECKING:
    from mindroom.bots.bot import EntityBot
    from mindroom.daemon.reload import ReloadCoordinator
    from mindroom.daemon.scheduling.scheduler import Scheduler
    from mindroom.plugins.loader import Plugin

__all__ = ["DaemonRuntime"]


@dataclass(slots=True, eq=False)
class DaemonRuntime:
    """Mutable holder of what is live now; a reload swaps `config` and `registry` (one reference each)."""

    config: Config
    registry: HookRegistry
    runtime_paths: RuntimePaths
    env: Mapping[str, str]
    server_name: str
    state: DaemonState
    coordinator: TurnCoordinator = field(default_factory=TurnCoordinator)
    bots: dict[str, EntityBot] = field(default_factory=dict)
    plugins: tuple[Plugin, ...] = ()
    tools: ToolCatalog = field(default_factory=ToolCatalog.builtin)
    bot_user_ids: dict[str, str] = field(default_factory=dict)
    room_ids: dict[str, str] = field(default_factory=dict)
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    scheduler: Scheduler | None = None
    reloader: ReloadCoordinator | None = None

    @property
    def agent_user_ids(self) -> dict[str, str]:
        """Agent name -> Matrix user id (the router excluded)."""
        return {name: user for name, user in self.bot_user_ids.items() if name != ROUTER_AGENT_NAME}

    @property
    def display_names(self) -> dict[str, str]:
        """Agent name -> display name from config."""
        return {name: agent.display_name for name, agent in self.config.agents.items()}

    def room_keys(self, room_id: str) -> set[str]:
        """Every config key that names this room, plus its id."""
        return {room_id, *(key for key, rid in self.room_ids.items() if rid == room_id)}

    def agents_in_room(self, room_id: str) -> tuple[str, ...]:
        """Agents of this room in config order: configured for it, or invited into it (running bots only)."""
        keys = self.room_keys(room_id)
        return tuple(
            name
            for name, agent in self.config.agents.items()
            if name in self.bots
            and (any(room in keys for room in agent.rooms) or room_id in self.bots[name].joined_rooms)
        )

    def router_in_room(self, room_id: str) -> bool:
        """True when the router manages this room (it joins every configured room)."""
        return room_id in self.room_ids.values() and ROUTER_AGENT_NAME in self.bots
