"""The daemon's pipeline on recording Matrix clients: real bots, real wiring and stores, no homeserver.

Each bot is a real `EntityBot` with the handlers the orchestrator's wiring (`event_handlers`) gives it; its
client is a `RecordingClient`, so a test feeds events into the bots' syncs and asserts on what they sent.
Models are the scripted model server, as in the AI layer's tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mindroom.ai import close_caches
from mindroom.bots.approvals.auto_approve_command import auto_approve_command
from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.approvals.timed_approvals import TimedApprovals
from mindroom.bots.bot import EntityBot
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.config.plugin import PluginEntryConfig
from mindroom.daemon.wiring import RunningDaemon, event_handlers
from mindroom.hooks import HookRegistry
from mindroom.matrix import MatrixEvent, bot_user_id
from mindroom.state.journal import TurnJournal
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.state.sqlite.grants import SqliteGrantStore
from mindroom.testing.model_server import ScriptedModelServer
from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver
from tests.bots.support import close_stores, unit_daemon

ALICE = "@alice:localhost"
BOB = "@bob:localhost"
MALLORY = "@mallory:localhost"
LOBBY = "!lobby:localhost"

Bot = EntityBot[RecordingClient]


def bench_config(model_server: ScriptedModelServer, agents: dict[str, dict[str, Any]], **extra: Any) -> Config:
    """A config whose models are the scripted server; Alice may use every room, Bob only the lobby."""
    model = {"provider": "openai", "id": "agent-model", "extra_kwargs": {"base_url": model_server.base_url}}
    raw: dict[str, Any] = {
        "models": {"default": {**model, "extra_kwargs": {**model["extra_kwargs"], "max_retries": 0}}},
        "agents": agents,
        "rooms": {"lobby": {}},
        "authorization": {"global_users": [ALICE], "room_permissions": {"lobby": [BOB]}},
        "defaults": {"enable_streaming": False, "streaming_edit_interval_ms": 50},
    }
    for key, value in extra.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return Config.model_validate(raw)


class Bench:
    """A running pipeline: `await bench.start()`, feed events with `deliver`, `await bench.settle()`, assert."""

    def __init__(
        self, tmp_path: Path, config: Config, registry: HookRegistry | None = None, journal: TurnJournal | None = None
    ) -> None:
        self.server = RecordingHomeserver()
        names = ["router", *config.responders()]
        user_ids = {name: bot_user_id(name, self.server.server_name, self.server.account_prefix) for name in names}
        self.bots: dict[str, Bot] = {}
        self.grants = SqliteGrantStore(tmp_path / "grants.db")
        self.desk = ApprovalDesk(
            SqliteApprovalStore(tmp_path / "approvals.db"), TimedApprovals(self.grants, lambda: self.daemon.live.config)
        )
        self.daemon: RunningDaemon = unit_daemon(
            tmp_path,
            LiveState(config=config, registry=registry or HookRegistry.empty()),
            bots=user_ids,
            rooms={"lobby": LOBBY},
            started_at_ms=0,
            approvals=self.desk,
            entities=self.bots,
            journal=journal,
        )
        self.commands = CommandTable.with_builtins(is_managed=self.daemon.directory.is_managed)
        directory = self.daemon.directory
        self.commands.register(auto_approve_command(self.desk, lambda: directory.bot_user_ids.values()))
        for name in names:
            self.bots[name] = self._bot(name)

    def _bot(self, name: str) -> Bot:
        daemon = self.daemon
        return EntityBot(
            name,
            self.server.client(name),
            event_handlers(daemon, self.commands, router=name == "router"),
            cell=daemon.cell,
            directory=daemon.directory,
            recent=daemon.recent,
            clock=daemon.clock,
            paths=daemon.paths,
            attachments=daemon.stores.attachments,
        )

    def client(self, name: str) -> RecordingClient:
        """The recording client of bot `name`."""
        return self.bots[name].client

    def user_id(self, name: str) -> str:
        """The Matrix user id of bot `name`."""
        return self.client(name).user_id

    async def start(self) -> None:
        """Log every bot in, put it in the lobby, and start its (recorded) sync."""
        for bot in self.bots.values():
            await bot.start()
            await bot.join(LOBBY)
            bot.start_sync()
        for bot in self.bots.values():
            await bot.wait_ready()

    async def deliver(self, event: MatrixEvent, *, to: tuple[str, ...] | None = None) -> None:
        """Hand `event` to the syncs of the bots `to` (default: every bot in its room), as the homeserver would."""
        for name in to or tuple(self.bots):
            if event.room_id in self.bots[name].joined_rooms:
                await self.client(name).deliver(event)

    async def settle(self, timeout_s: float = 20.0) -> None:
        """Wait until no bot has a task running (the handlers of what was delivered, and what they spawned)."""
        async with asyncio.timeout(timeout_s):
            while running := [task for bot in self.bots.values() for task in bot.tasks.running]:
                await asyncio.wait(running)

    async def stop(self) -> None:
        """Stop every bot, then close the stores and the model layer's caches."""
        for bot in self.bots.values():
            await bot.stop(grace_s=1.0)
        close_stores(self.daemon)
        self.desk.store.close()
        self.grants.close()
        await close_caches()


async def until(condition: Any, timeout_s: float = 10.0) -> None:
    """Wait until `condition()` is true (polling), or fail after `timeout_s`."""
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def registry_of(*callbacks: Any) -> HookRegistry:
    """The hook registry of one plugin made of `callbacks` (functions decorated with `@hook`)."""
    attributes = {
        "name": "bench",
        "discovered_hooks": callbacks,
        "entry_config": PluginEntryConfig(path="./bench"),
        "plugin_order": 0,
    }
    return HookRegistry.from_plugins([type("PluginStub", (), attributes)()])
