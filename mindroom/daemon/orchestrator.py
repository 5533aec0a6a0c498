"""The composition root: live state, one bot per agent plus the router, rooms, commands, schedules, reload.

`Orchestrator` starts everything in order (the state under its lock, log in, create/join rooms, sync,
ready, then the scheduler and the file watcher) and stops it in reverse. It wires what the packages
below it only declare: the pipeline's handlers into each bot, `!schedule` and `!reload-plugins` into
the command table, and its own `build_live_state` and `apply_entity_changes` into the reload coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path

from mindroom import ai
from mindroom.bots.approvals.auto_approve_command import auto_approve_command
from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.approvals.timed_approvals import TimedApprovals
from mindroom.bots.bot import EntityBot
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.directory import Directory
from mindroom.bots.pipeline_capabilities import RunClock, TurnStores
from mindroom.bots.recovery import recover_interrupted
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.bot_start import BotDown, NewDevices, start_bots, tell_admin_room
from mindroom.daemon.chat_settings import register_settings_commands, with_chat_settings
from mindroom.daemon.live import build_live_state
from mindroom.daemon.mcp import MCPLifecycle
from mindroom.daemon.mind import start_mind
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome, reload_command
from mindroom.daemon.room_setup import set_up_rooms
from mindroom.daemon.scheduling.command import schedule_command
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.standby import daemon_state
from mindroom.daemon.watch import ConfigWatcher, EnvFile
from mindroom.daemon.wiring import RunningDaemon, event_handlers
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient
from mindroom.matrix.appservice.server import Appservice, listening_appservice
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.plugins.discovery import plugin_watch_paths
from mindroom.private_files import private_dir, warn_if_shared
from mindroom.state.attachments import AttachmentStore
from mindroom.state.backend import StateBackend, StateStores
from mindroom.state.crypto import CryptoVault
from mindroom.state.tokens import SyncTokens
from mindroom.tool_system.isolation import close_tool_runtime
from mindroom.tool_system.runtime_context import set_registry_provider

__all__ = ["Bot", "Orchestrator", "prepare_live_state"]

logger = get_logger(__name__)

Bot = EntityBot[MatrixBotClient]
"""A bot of the running daemon, with its real Matrix client."""


async def prepare_live_state(environment: DaemonEnvironment) -> LiveState:
    """Config, plugins, tools and the hook registry, built off the loop (as on reload); needs no lock."""
    built = await asyncio.to_thread(build_live_state, environment.runtime_paths, previous=None)
    return built.live


class Orchestrator:
    """Runs the daemon: `await start()`, then `await stop()` (or use `async with`)."""

    def __init__(
        self,
        environment: DaemonEnvironment,
        *,
        watch: bool = True,
        reload_debounce_s: float = 0.25,
        on_reload: Callable[[ReloadOutcome], None] | None = None,
        state: StateBackend | None = None,
        prepared: LiveState | None = None,
        run_since: float | None = None,
        new_crypto_device: bool | None = None,
        new_devices: Iterable[str] = (),
    ) -> None:
        """`state`: the state backend, already locked by the caller (else `start` opens and locks its own);
        `prepared`: live state built ahead (a standby's); `run_since`: the start of the run this one continues;
        `new_devices`: bots that may replace a lost crypto store (`new_crypto_device`: every bot, or none)."""
        self.environment = environment
        # A bot whose crypto store is lost starts as a new device only when the operator says so.
        self._new_devices = (
            NewDevices.from_settings(environment.values.get("MINDROOM_NEW_CRYPTO_DEVICE"), new_devices)
            if new_crypto_device is None
            else NewDevices(every=new_crypto_device, bots=frozenset(new_devices))
        )
        self.down: dict[str, BotDown] = {}
        """Bots that stay down because their crypto store is lost (the others run)."""
        self.runtime_paths = environment.runtime_paths
        self._env_file = EnvFile(environment.config_path.parent / ".env")
        self._watch = watch
        self._reload_debounce_s = reload_debounce_s
        self._on_reload = on_reload
        self.running: RunningDaemon | None = None
        """What the current run is made of (None while stopped)."""
        self.bots: dict[str, Bot] = {}
        self.reloader: ReloadCoordinator | None = None
        self.scheduler: Scheduler | None = None
        self.mcp: MCPLifecycle | None = None
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._watcher: ConfigWatcher | None = None
        self._stopping, self._stopped = False, asyncio.Event()
        self.state = state
        self._owns_state = state is None
        self._sync_tokens: SyncTokens | None = None
        self._crypto_vault: CryptoVault | None = None
        self._recovery_keys = RecoveryKeys.from_environment(environment.values, environment.storage_root)
        self._prepared = prepared
        self._run_since = run_since
        self._appservice: Appservice | None = None

    @property
    def config_path(self) -> Path:
        """The config file this daemon runs."""
        return self.environment.config_path

    def _homeserver(self) -> HomeserverSettings:
        homeserver = self.environment.homeserver
        if homeserver is None:
            raise ConfigError(self.config_path, ["MATRIX_HOMESERVER is not set (and no embedded homeserver runs)"])
        return homeserver

    async def start(self) -> RunningDaemon:
        """Log every bot in, create and join rooms, start syncing, wait until all bots are ready, then schedule."""
        paths = self.runtime_paths
        homeserver = self._homeserver()
        live = self._prepared or await prepare_live_state(self.environment)
        self._prepared = None
        warn_if_shared(paths.storage_root)
        private_dir(paths.storage_root)
        stores = await self._open_state(live)
        live = await with_chat_settings(live, stores.overrides, paths)
        cell = LiveCell(live)
        desk = ApprovalDesk(stores.approvals, TimedApprovals(stores.grants, lambda: cell.live.config))
        running = RunningDaemon(
            cell=cell,
            directory=Directory(homeserver.server_name, stores.rooms, entities=self.bots),
            stores=TurnStores(
                stores.journal,
                stores.answers,
                AttachmentStore(paths.storage_root),
                desk,
                session_url=stores.session_url,
            ),
            paths=paths,
            clock=RunClock.starting(self._run_since),
            mind=await start_mind(paths, stores.session_url, live.config, self.commands),
        )
        self.running = running
        directory = running.directory
        self.commands.register(auto_approve_command(desk, lambda: directory.bot_user_ids.values()))
        set_registry_provider(lambda: cell.live.registry)
        self.mcp = MCPLifecycle(cell, directory, paths)
        await self.mcp.apply(live.config)  # servers connect in the background while the bots log in
        # Listening before the bots sign in: what the homeserver sends meanwhile is queued, not refused.
        self._appservice = await listening_appservice(homeserver.appservice_registration, homeserver.url)
        names = [ROUTER_AGENT_NAME, *live.config.responders()]
        for name in names:
            self.bots[name] = self._make_bot(name, running, live)
        logger.info("logging in", bots=names, homeserver=homeserver.url)
        if unknown := self._new_devices.unknown(names):
            logger.warning("--new-device names no bot of this config", bots=unknown)
        self.down = await start_bots(self.bots)
        for name in self.down:
            del self.bots[name]
        await set_up_rooms(
            self.bots[ROUTER_AGENT_NAME], directory, live.config, live.config.managed_room_keys(), self.bots
        )
        assert running.stores.approvals is not None  # expired before syncing (see `expire_overdue`)
        await running.stores.approvals.expire_overdue({name: bot.client for name, bot in self.bots.items()})
        for bot in self.bots.values():
            bot.start_sync()
        await asyncio.gather(*(bot.wait_ready() for bot in self.bots.values()))
        if self._appservice is not None:  # every bot receives: what was queued is handed out now
            self._appservice.open()
        for bot in self.bots.values():
            await recover_interrupted(bot, running.stores.journal, bot.handlers)
        await self._tell_admin_room(self.down)
        self.scheduler = Scheduler(cell, directory, stores.schedules)
        self.scheduler.start()
        self.commands.register(schedule_command(self.scheduler, directory))
        self.reloader = ReloadCoordinator(
            cell,
            directory,
            build=lambda previous: build_live_state(paths, previous=previous),
            apply=self.mcp.before(self.apply_entity_changes),
            on_outcome=self._on_reload,
            env_file=self._env_file,
        )
        self.commands.register(reload_command(self.reloader))
        register_settings_commands(self.commands, stores.overrides, self.reloader, paths)
        if self._watch:
            self._watcher = ConfigWatcher(
                paths.config_path,
                lambda: plugin_watch_paths(cell.live.config, paths),
                self.reloader.on_files_changed,
                debounce_s=self._reload_debounce_s,
            )
            self._watcher.start()
        logger.info(
            "daemon ready",
            agents=list(live.config.agents),
            teams=list(live.config.teams),
            rooms=dict(directory.room_ids),
            plugins=[plugin.name for plugin in live.plugins],
            hooks=len(live.registry),
            down=sorted(self.down),
        )
        ai.preload_in_background(postgres=self.state is not None and self.state.kind == "postgresql")
        return running

    async def _tell_admin_room(self, down: Mapping[str, BotDown]) -> None:
        """The admin room hears which bots stay down and the fix (the router posts it)."""
        running, router = self._running(), self.bots[ROUTER_AGENT_NAME]
        room_id = running.directory.room_ids.get(running.live.config.admin_room or "")
        if room_id is not None:
            await tell_admin_room(down, lambda text: router.client.send_message(room_id, text, msgtype="m.notice"))

    def _is_managed(self, room_id: str) -> bool:
        """True for a room the current run's config names (what `!leave` will not leave)."""
        return self.running is not None and self.running.directory.is_managed(room_id)

    async def _open_state(self, live: LiveState) -> StateStores:
        """The stores, under the state's lock (taken here unless the caller did)."""
        if self.state is None:
            self.state = daemon_state(self.environment, live.config)
        if not self.state.locked:
            await self.state.acquire()
        stores = await self.state.open_stores()
        self._sync_tokens = stores.sync_tokens
        self._crypto_vault = stores.crypto
        return stores

    def _make_bot(self, name: str, running: RunningDaemon, live: LiveState) -> Bot:
        homeserver = self._homeserver()
        config = live.config
        is_router = name == ROUTER_AGENT_NAME
        entity = config.router if is_router else config.responders()[name]
        client = MatrixBotClient(
            name,
            homeserver.url,
            homeserver.server_name,
            running.paths.storage_root,
            registration_shared_secret=homeserver.registration_shared_secret,
            password=entity.password,
            display_name=entity.display_name,
            account_prefix=homeserver.account_prefix,
            new_crypto_device=self._new_devices.allows(name),
            sync_tokens=self._sync_tokens,
            crypto_vault=self._crypto_vault,
            recovery_keys=self._recovery_keys,
            appservice=self._appservice,
        )
        return EntityBot(
            name,
            client,
            event_handlers(running, self.commands, router=is_router),
            cell=running.cell,
            directory=running.directory,
            recent=running.recent,
            clock=running.clock,
            paths=running.paths,
            attachments=running.stores.attachments,
        )

    async def apply_entity_changes(self, old: LiveState, changes: EntityChanges, grace_s: float = 30.0) -> None:
        """After a reload's swap: removed agents leave their rooms and stop, added ones log in and join, new
        rooms are set up, and changed agents restart. Untouched entities are left alone; the router changes
        in place.

        A changed agent hands over without a gap: its new instance logs in and joins first, then the old
        one stops syncing and the new one starts from the sync token the old one stored, while the old
        one's in-flight turns finish (persisted dedup keeps every event to one answer).
        """
        running = self._running()
        directory = running.directory
        live = running.live
        config = live.config
        bots = self.bots
        if running.mind is not None:  # knowledge bases follow the config whatever else changed
            await running.mind.apply(config)
        removed = {name: bots[name] for name in changes.removed if name in bots}
        await asyncio.gather(
            *(bot.stop("removed from config", grace_s, leave_rooms=True) for bot in removed.values()),
            return_exceptions=True,
        )
        for name in changes.removed:
            bots.pop(name, None)
            self.down.pop(name, None)
            directory.signed_out(name)
        if ROUTER_AGENT_NAME in changes.changed:
            await bots[ROUTER_AGENT_NAME].client.ensure_display_name(config.router.display_name)
        restart = [name for name in changes.changed if name != ROUTER_AGENT_NAME and name in bots]
        retiring = {name: bots[name] for name in restart}
        fresh = {name: self._make_bot(name, running, live) for name in (*changes.added, *restart)}
        down = await start_bots(fresh)
        for name in down:  # a restarted agent whose store is lost keeps its running instance
            del fresh[name]
            retiring.pop(name, None)
        newly_down = {name: bot for name, bot in down.items() if name not in bots}
        self.down.update(newly_down)
        for name, previous in retiring.items():
            bot = fresh[name]
            bot.joined_rooms |= previous.joined_rooms
            for key in set(old.config.agent_rooms(name)) - set(config.agent_rooms(name)):
                room_id = directory.room_ids.get(key)
                if room_id is not None and room_id in bot.joined_rooms:
                    with contextlib.suppress(MindroomError):
                        await bot.leave(room_id)
        keys = [
            key
            for key in config.managed_room_keys()
            if key in changes.new_rooms or any(key in config.agent_rooms(name) for name in fresh)
        ]
        await set_up_rooms(bots[ROUTER_AGENT_NAME], directory, config, keys, fresh)
        await asyncio.gather(*(previous.stop_sync() for previous in retiring.values()))
        for name, bot in fresh.items():
            bots[name] = bot
            bot.start_sync()
        results = await asyncio.gather(
            *(previous.stop("config changed", grace_s) for previous in retiring.values()),
            *(bot.wait_ready() for bot in fresh.values()),
            return_exceptions=True,
        )
        for error in results:
            if isinstance(error, BaseException):
                raise error
        await self._tell_admin_room(newly_down)

    def _running(self) -> RunningDaemon:
        if self.running is None:
            msg = "the daemon is not running"
            raise RuntimeError(msg)
        return self.running

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0) -> None:
        """Stop reloading, watching, scheduling, every bot (answers get `grace_s`), then state; each part in turn."""
        if self._stopping:
            await self._stopped.wait()
            return
        if self.running is None:
            await self._release_state()
            return
        self._stopping = True
        logger.info("daemon stopping", reason=reason, grace_s=grace_s)
        bots = self.bots.values()
        parts: list[tuple[str, Callable[[], Awaitable[object]] | None]] = [
            ("reloader", self.reloader.stop if self.reloader is not None else None),
            ("watcher", self._watcher.stop if self._watcher is not None else None),
            ("scheduler", self.scheduler.stop if self.scheduler is not None else None),
            # The first of what receives: what arrives from now on waits in the homeserver for the next run.
            ("appservice", self._appservice.stop if self._appservice is not None else None),
            ("bots", lambda: asyncio.gather(*(bot.stop(reason, grace_s) for bot in bots), return_exceptions=True)),
            ("mcp", self.mcp.stop if self.mcp is not None else None),
            ("memory", functools.partial(self.running.mind.stop, grace_s) if self.running.mind is not None else None),
            ("tools", close_tool_runtime),
            ("model clients and stores", ai.close_caches),
            ("state", self._release_state),
        ]
        for part, stop in parts:
            if stop is not None:
                try:
                    await stop()
                except Exception as error:  # logged, and the other parts still stop: the state is always released
                    logger.warning("a part did not stop cleanly", part=part, error=str(error) or type(error).__name__)
        self.running, self.bots, self.mcp = None, {}, None
        self.reloader, self.scheduler, self._watcher = None, None, None
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._stopping = False
        self._stopped.set()
        logger.info("daemon stopped", reason=reason)

    async def _release_state(self) -> None:
        """Stop handing out the state's sync positions; close the state if this orchestrator opened it itself."""
        self._sync_tokens = None
        self._crypto_vault = None
        if self.state is not None and self._owns_state:
            await self.state.close()
            self.state = None

    async def __aenter__(self) -> Orchestrator:
        try:
            await self.start()
        except BaseException:
            await self.stop("start failed")
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop(grace_s=self.environment.shutdown_grace_s)
