"""The composition root: the daemon's start-up phases in their order, reloads' entity changes, and the stop.

`Orchestrator.start` runs the phases `startup.plan.STARTUP` names, in that order: live state (config,
plugins, tools, hook registry), the state under its lock, the run's capabilities, MCP servers, the bots'
accounts, rooms, sync, recovery, schedules, reload, ready. Each phase is a function of `mindroom.daemon.startup`
(or `room_setup`) taking what earlier phases made; what they make is kept in one `_Run` per run. A phase that
starts something says how it stops, and `stop` runs those parts with the phases backwards, each in turn.
It wires what the packages below it only declare: the pipeline's handlers into each bot, `!schedule` and
`!reload-plugins` into the command table, and its own `apply_entity_changes` into the reload coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mindroom.bots.access import membership_in_use
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.runtime import LiveState
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.daemon.bot_start import BotDown, NewDevices, start_bots
from mindroom.daemon.connections import start_connections
from mindroom.daemon.mcp import MCPLifecycle
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome
from mindroom.daemon.room_setup import set_up_rooms
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.startup.accounts import Accounts, Bot, Devices, sign_in
from mindroom.daemon.startup.phases import (
    Reloading,
    ReloadOptions,
    announce_ready,
    build_run,
    prepare_live_state,
    recover,
    start_mcp,
    start_reloading,
    start_schedules,
    start_syncing,
)
from mindroom.daemon.startup.plan import RunProgress, Stopping
from mindroom.daemon.startup.state import StateHolder
from mindroom.daemon.threads import start_threads
from mindroom.daemon.tool_parts import provide_tool_parts
from mindroom.daemon.watch import EnvFile
from mindroom.daemon.wiring import RunningDaemon
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.state.backend import StateBackend

__all__ = ["Bot", "Orchestrator", "prepare_live_state"]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _StartOptions:
    """How this daemon starts each run: its bots' devices, how reloads are asked for, the run it continues."""

    devices: Devices
    reload: ReloadOptions
    run_since: float | None


class _Run:
    """What the phases of one run made so far, and how each stops (a start makes one; a stop drops it)."""

    __slots__ = ("accounts", "bots", "mcp", "progress", "reloading", "running", "scheduler")

    def __init__(self) -> None:
        self.progress = RunProgress()
        self.bots: dict[str, Bot] = {}
        """The directory's entities, filled by `accounts` and changed by reloads."""
        self.running: RunningDaemon | None = None
        self.mcp: MCPLifecycle | None = None
        self.accounts: Accounts | None = None
        self.scheduler: Scheduler | None = None
        self.reloading: Reloading | None = None


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
        allowed = (
            NewDevices.from_settings(environment.values.get("MINDROOM_NEW_CRYPTO_DEVICE"), new_devices)
            if new_crypto_device is None
            else NewDevices(every=new_crypto_device, bots=frozenset(new_devices))
        )
        self._options = _StartOptions(
            Devices(allowed, RecoveryKeys.from_environment(environment.values, environment.storage_root)),
            ReloadOptions(EnvFile(environment.config_path.parent / ".env"), watch, reload_debounce_s, on_reload),
            run_since,
        )
        self._state = StateHolder(environment, state)
        self._prepared = prepared
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._run: _Run | None = None
        self._stopping, self._stopped = False, asyncio.Event()

    @property
    def config_path(self) -> Path:
        """The config file this daemon runs."""
        return self.environment.config_path

    @property
    def runtime_paths(self) -> RuntimePaths:
        """The paths every part of the daemon shares."""
        return self.environment.runtime_paths

    @property
    def state(self) -> StateBackend | None:
        """The state backend (None before a start opened one, and once closed by the stop)."""
        return self._state.backend

    @property
    def running(self) -> RunningDaemon | None:
        """What the current run is made of (None while starting, before the `run` phase, and while stopped)."""
        return self._run.running if self._run is not None else None

    @property
    def progress(self) -> RunProgress | None:
        """The current run's phases so far and how each stops (None while stopped)."""
        return self._run.progress if self._run is not None else None

    @property
    def bots(self) -> dict[str, Bot]:
        """The running bots by name."""
        return self._run.bots if self._run is not None else {}

    @property
    def down(self) -> dict[str, BotDown]:
        """Bots that stay down because their crypto store is lost (the others run)."""
        accounts = self._run.accounts if self._run is not None else None
        return accounts.down if accounts is not None else {}

    @property
    def mcp(self) -> MCPLifecycle | None:
        """The MCP servers of the current run."""
        return self._run.mcp if self._run is not None else None

    @property
    def scheduler(self) -> Scheduler | None:
        """The scheduler of the current run."""
        return self._run.scheduler if self._run is not None else None

    @property
    def reloader(self) -> ReloadCoordinator | None:
        """The reload coordinator of the current run."""
        reloading = self._run.reloading if self._run is not None else None
        return reloading.reloader if reloading is not None else None

    def _homeserver(self) -> HomeserverSettings:
        homeserver = self.environment.homeserver
        if homeserver is None:
            raise ConfigError(self.config_path, ["MATRIX_HOMESERVER is not set (and no embedded homeserver runs)"])
        return homeserver

    async def start(self) -> RunningDaemon:
        """Run the start-up phases in their order: log every bot in, create and join rooms, start syncing, wait
        until all bots are ready, then schedule and reload."""
        homeserver = self._homeserver()
        run = self._run = _Run()
        progress, bots, commands = run.progress, run.bots, self.commands
        progress.enter("live state")
        live = self._prepared or await prepare_live_state(self.environment)
        self._prepared = None
        stores = await self._state.open(live.config, progress.enter("state"))
        running = run.running = await build_run(
            live,
            stores,
            self.runtime_paths,
            server_name=homeserver.server_name,
            run_since=self._options.run_since,
            commands=commands,
            entities=bots,
            stops=progress.enter("run"),
        )
        live = running.live  # with the chat's settings
        mcp = run.mcp = await start_mcp(running, progress.enter("mcp servers"))
        accounts = run.accounts = await sign_in(
            homeserver,
            running,
            live,
            devices=self._options.devices,
            commands=commands,
            state=self._state,
            bots=bots,
            stops=progress.enter("accounts"),
        )
        progress.enter("rooms")
        config = live.config
        await set_up_rooms(bots[ROUTER_AGENT_NAME], running.directory, config, config.managed_room_keys(), bots)
        progress.enter("sync")
        await start_syncing(bots, running.stores.approvals, accounts.factory.appservice)
        progress.enter("recovery")
        await recover(accounts, running.stores.journal)
        run.scheduler = start_schedules(running, stores.schedules, commands, progress.enter("schedules"))
        reload_stops = progress.enter("reload")
        run.reloading = start_reloading(
            running, mcp.before(self.apply_entity_changes), self._options.reload, stores, commands, reload_stops
        )
        provide_tool_parts(running, run.scheduler, run.reloading.reloader, stores.overrides, reload_stops)
        start_threads(running, commands, reload_stops)
        start_connections(running, stores, commands, self._options.devices.recovery_keys, reload_stops)
        progress.enter("ready")
        announce_ready(live, running.directory, accounts.down, postgres=self._state.postgresql)
        return running

    def _is_managed(self, room_id: str) -> bool:
        """True for a room the current run's config names (what `!leave` will not leave)."""
        running = self.running
        return running is not None and running.directory.is_managed(room_id)

    async def apply_entity_changes(self, old: LiveState, changes: EntityChanges, grace_s: float = 30.0) -> None:
        """After a reload's swap: removed agents leave their rooms and stop, added ones log in and join, new
        rooms are set up, and changed agents restart. Untouched entities are left alone; the router changes
        in place.

        A changed agent hands over without a gap: its new instance logs in and joins first, then the old
        one stops syncing and the new one starts from the sync token the old one stored, while the old
        one's in-flight turns finish (persisted dedup keeps every event to one answer).
        """
        running, accounts = self._running(), self._accounts()
        directory = running.directory
        live = running.live
        config = live.config
        bots, staying_down = accounts.bots, accounts.down
        if running.mind is not None:  # knowledge bases follow the config whatever else changed
            await running.mind.apply(config)
        removed = {name: bots[name] for name in changes.removed if name in bots}
        await asyncio.gather(
            *(bot.stop("removed from config", grace_s, leave_rooms=True) for bot in removed.values()),
            return_exceptions=True,
        )
        for name in changes.removed:
            bots.pop(name, None)
            staying_down.pop(name, None)
            directory.signed_out(name)
        if ROUTER_AGENT_NAME in changes.changed:
            await bots[ROUTER_AGENT_NAME].client.ensure_display_name(config.router.display_name)
        restart = [name for name in changes.changed if name != ROUTER_AGENT_NAME and name in bots]
        retiring = {name: bots[name] for name in restart}
        fresh = {name: accounts.factory.make(name, live) for name in (*changes.added, *restart)}
        down = await start_bots(fresh)
        for name in down:  # a restarted agent whose store is lost keeps its running instance
            del fresh[name]
            retiring.pop(name, None)
        newly_down = {name: bot for name, bot in down.items() if name not in bots}
        staying_down.update(newly_down)
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
        if membership_in_use(config):  # turned on by this reload: who is in the running bots' rooms, read now
            for bot in list(bots.values()):
                for room_id in sorted(bot.joined_rooms):
                    if not directory.members.known(room_id):
                        await directory.members.read(bot.client, room_id)
        await accounts.tell_admin_room(newly_down)

    def _running(self) -> RunningDaemon:
        if self.running is None:
            msg = "the daemon is not running"
            raise RuntimeError(msg)
        return self.running

    def _accounts(self) -> Accounts:
        accounts = self._run.accounts if self._run is not None else None
        if accounts is None:
            msg = "the daemon's bots are not signed in"
            raise RuntimeError(msg)
        return accounts

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0) -> None:
        """Stop what the phases started, the phases backwards: reloading, watching, scheduling, receiving, every
        bot (answers get `grace_s`), MCP servers, memory, tools, model clients, then state; each part in turn."""
        if self._stopping:
            await self._stopped.wait()
            return
        run = self._run
        if run is None or run.running is None:
            await self._state.release()
            return
        self._stopping = True
        logger.info("daemon stopping", reason=reason, grace_s=grace_s)
        stopping = Stopping(reason, grace_s)
        for part in run.progress.stop_order():
            try:
                await part.stop(stopping)
            except Exception as error:  # logged, and the other parts still stop: the state is always released
                logger.warning("a part did not stop cleanly", part=part.name, error=str(error) or type(error).__name__)
        self._run = None
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._stopping = False
        self._stopped.set()
        logger.info("daemon stopped", reason=reason)

    async def __aenter__(self) -> Orchestrator:
        try:
            await self.start()
        except BaseException:
            await self.stop("start failed")
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop(grace_s=self.environment.shutdown_grace_s)
