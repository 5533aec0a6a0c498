"""The composition root: live state, one bot per agent plus the router, rooms, commands, schedules, reload.

`Orchestrator` starts everything in order (the state under its lock, log in, create/join rooms, sync,
ready, then the scheduler and the file watcher) and stops it in reverse. It wires what the packages
below it only declare: the pipeline's handlers into each bot, `!schedule` and `!reload-plugins` into
the command table, and its own `build_live_state` and `apply_entity_changes` into the reload coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from mindroom import ai
from mindroom.bots.approvals import ApprovalDesk
from mindroom.bots.bot import EntityBot
from mindroom.bots.capabilities import RunClock, TurnStores
from mindroom.bots.commands import CommandTable
from mindroom.bots.directory import Directory
from mindroom.bots.recovery import recover_interrupted
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.live import build_live_state
from mindroom.daemon.mind import start_mind
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome, reload_command
from mindroom.daemon.scheduling.command import schedule_command
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.standby import daemon_state
from mindroom.daemon.watch import ConfigWatcher
from mindroom.daemon.wiring import RunningDaemon, event_handlers
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient, MatrixRequestError
from mindroom.matrix.rooms import RoomEntry
from mindroom.plugins.discovery import plugin_watch_paths
from mindroom.private_files import private_dir, warn_if_shared
from mindroom.state.attachments import AttachmentStore
from mindroom.state.backend import StateBackend, StateStores
from mindroom.state.tokens import SyncTokens
from mindroom.tool_system.isolation import shared_pool
from mindroom.tool_system.runtime_context import set_registry_provider

__all__ = ["Bot", "Orchestrator", "prepare_live_state"]

logger = get_logger(__name__)

Bot = EntityBot[MatrixBotClient]
"""A bot of the running daemon, with its real Matrix client."""


async def prepare_live_state(environment: DaemonEnvironment) -> LiveState:
    """Config, plugins, tools and the hook registry, built off the loop (as on reload); needs no lock."""
    built = await asyncio.to_thread(build_live_state, environment.runtime_paths, previous=None, strict=False)
    assert built.live is not None  # a tolerant build always yields a state
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
    ) -> None:
        """`state`: the state backend, already locked by the caller (else `start` opens and locks its own);
        `prepared`: live state built ahead (a standby's); `run_since`: the start of the run this one continues."""
        self.environment = environment
        # A bot whose crypto store is lost starts as a new device only when the operator says so.
        self._new_crypto_device = (
            environment.values.get("MINDROOM_NEW_CRYPTO_DEVICE", "").strip().lower() in {"1", "true", "yes"}
            if new_crypto_device is None
            else new_crypto_device
        )
        self.runtime_paths = environment.runtime_paths
        self._watch = watch
        self._reload_debounce_s = reload_debounce_s
        self._on_reload = on_reload
        self.running: RunningDaemon | None = None
        """What the current run is made of (None while stopped)."""
        self.bots: dict[str, Bot] = {}
        self.reloader: ReloadCoordinator | None = None
        self.scheduler: Scheduler | None = None
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._watcher: ConfigWatcher | None = None
        self._stopping = False
        self._stopped = asyncio.Event()
        self.state = state
        self._owns_state = state is None
        self._sync_tokens: SyncTokens | None = None
        self._prepared = prepared
        self._run_since = run_since

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
        running = RunningDaemon(
            cell=LiveCell(live),
            directory=Directory(homeserver.server_name, stores.rooms, entities=self.bots),
            stores=TurnStores(
                stores.journal,
                stores.answers,
                AttachmentStore(paths.storage_root),
                ApprovalDesk(stores.approvals),
                session_url=stores.session_url,
            ),
            paths=paths,
            clock=RunClock.starting(self._run_since),
            mind=await start_mind(paths, stores.session_url, live.config, self.commands),
        )
        self.running = running
        cell, directory = running.cell, running.directory
        set_registry_provider(lambda: cell.live.registry)
        names = [ROUTER_AGENT_NAME, *live.config.agents]
        for name in names:
            self.bots[name] = self._make_bot(name, running, live)
        logger.info("logging in", bots=names, homeserver=homeserver.url)
        await asyncio.gather(*(bot.start() for bot in self.bots.values()))
        await self._setup_rooms(directory, live, live.config.managed_room_keys(), self.bots)
        await self._expire_approvals(running.stores)
        for bot in self.bots.values():
            bot.start_sync()
        await asyncio.gather(*(bot.wait_ready() for bot in self.bots.values()))
        for bot in self.bots.values():
            await recover_interrupted(bot, running.stores.journal, bot.handlers)
        self.scheduler = Scheduler(cell, directory, stores.schedules)
        self.scheduler.start()
        self.commands.register(schedule_command(self.scheduler, directory))
        self.reloader = ReloadCoordinator(
            cell,
            directory,
            build=lambda previous: build_live_state(paths, previous=previous, strict=True),
            apply=self.apply_entity_changes,
            on_outcome=self._on_reload,
        )
        self.commands.register(reload_command(self.reloader))
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
            rooms=dict(directory.room_ids),
            plugins=[plugin.name for plugin in live.plugins],
            hooks=len(live.registry),
        )
        ai.preload_in_background(postgres=self.state is not None and self.state.kind == "postgresql")
        return running

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
        return stores

    async def _expire_approvals(self, stores: TurnStores) -> None:
        """Before syncing: approvals whose time ran out while the daemon was down are marked so on their cards.

        Before, so an answer that arrived meanwhile finds the card already expired, as it would have been.
        """
        assert stores.approvals is not None
        expired = await stores.approvals.expire_overdue({name: bot.client for name, bot in self.bots.items()})
        if expired:
            logger.info("approvals expired while the daemon was down", count=expired)

    def _make_bot(self, name: str, running: RunningDaemon, live: LiveState) -> Bot:
        homeserver = self._homeserver()
        config = live.config
        is_router = name == ROUTER_AGENT_NAME
        client = MatrixBotClient(
            name,
            homeserver.url,
            homeserver.server_name,
            running.paths.storage_root,
            registration_shared_secret=homeserver.registration_shared_secret,
            password=config.router.password if is_router else config.agents[name].password,
            display_name=config.router.display_name if is_router else config.agents[name].display_name,
            account_prefix=homeserver.account_prefix,
            new_crypto_device=self._new_crypto_device,
            sync_tokens=self._sync_tokens,
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

    async def _setup_rooms(
        self, directory: Directory, live: LiveState, keys: Iterable[str], joiners: Mapping[str, Bot]
    ) -> None:
        """The router creates or joins these rooms and invites their agents and users; `joiners` among them join.

        A room found under a configured alias is used only when the daemon made it before, or one of its
        accounts created it or holds its top power level: anyone can create `#alerts` first, and the bots
        must not follow the operator's config into a stranger's room.
        """
        config = live.config
        router = self.bots[ROUTER_AGENT_NAME]
        for key in keys:
            room_config = config.rooms.get(key)
            try:
                entry = await router.client.open_room(
                    key,
                    name=(room_config.name if room_config and room_config.name else key),
                    topic=(room_config.topic or room_config.description) if room_config else None,
                    encrypted=room_config is not None and room_config.encrypted,
                )
            except MatrixRequestError as exc:
                logger.error("room cannot be joined; not using it", room=key, error=str(exc))
                continue
            room_id = entry.room_id
            if not await self._room_is_ours(directory, router, key, entry):
                with contextlib.suppress(MindroomError):
                    await router.client.leave(room_id)
                continue
            directory.keep_room(ROUTER_AGENT_NAME, room_id, "created" if entry.created else "verified", key)
            if room_config is not None and room_config.encrypted and not entry.created:
                await router.client.enable_encryption(room_id)
            members = [name for name, agent in config.agents.items() if key in agent.rooms]
            invite = [directory.bot_user_ids[name] for name in members if name in directory.bot_user_ids]
            await router.client.invite_missing(room_id, [*invite, *config.room_defaults.invite_users])
            router.joined_rooms.add(room_id)
            directory.room_set_up(key, room_id)
            await asyncio.gather(*(joiners[name].join(room_id) for name in members if name in joiners))

    @staticmethod
    async def _room_is_ours(directory: Directory, router: Bot, key: str, entry: RoomEntry) -> bool:
        if entry.created or key.startswith("!") or directory.memory.known(entry.room_id):
            return True
        if await router.client.room_is_ours(entry.room_id, directory.bot_user_ids.values()):
            return True
        logger.error(
            "room alias belongs to an account outside this daemon; not using it",
            room=key,
            room_id=entry.room_id,
            fix="remove the alias from that room, or name another room in config.yaml",
        )
        return False

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
            directory.signed_out(name)
        if ROUTER_AGENT_NAME in changes.changed:
            await bots[ROUTER_AGENT_NAME].client.ensure_display_name(config.router.display_name)
        restart = [name for name in changes.changed if name != ROUTER_AGENT_NAME and name in bots]
        retiring = {name: bots[name] for name in restart}
        fresh = {name: self._make_bot(name, running, live) for name in (*changes.added, *restart)}
        await asyncio.gather(*(bot.start() for bot in fresh.values()))
        for name, previous in retiring.items():
            bot = fresh[name]
            bot.joined_rooms |= previous.joined_rooms
            for key in set(old.config.agents[name].rooms) - set(config.agents[name].rooms):
                room_id = directory.room_ids.get(key)
                if room_id is not None and room_id in bot.joined_rooms:
                    with contextlib.suppress(MindroomError):
                        await bot.leave(room_id)
        keys = [
            key
            for key in config.managed_room_keys()
            if key in changes.new_rooms or any(key in config.agents[name].rooms for name in fresh)
        ]
        await self._setup_rooms(directory, live, keys, fresh)
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

    def _running(self) -> RunningDaemon:
        if self.running is None:
            msg = "the daemon is not running"
            raise RuntimeError(msg)
        return self.running

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0) -> None:
        """Stop reloading, watching and scheduling, then every bot (in-flight answers get `grace_s`), then state."""
        if self._stopping:
            await self._stopped.wait()
            return
        if self.running is None:
            await self._release_state()
            return
        self._stopping = True
        logger.info("daemon stopping", reason=reason, grace_s=grace_s)
        if self.reloader is not None:
            await self.reloader.stop()
        if self._watcher is not None:
            await self._watcher.stop()
        if self.scheduler is not None:
            await self.scheduler.stop()
        await asyncio.gather(*(bot.stop(reason, grace_s) for bot in self.bots.values()), return_exceptions=True)
        if self.running.mind is not None:
            await self.running.mind.stop(grace_s)
        set_registry_provider(None)
        shared_pool().close()
        await ai.close_caches()
        await self._release_state()
        self.running = None
        self.bots = {}
        self.reloader = None
        self.scheduler = None
        self._watcher = None
        self.commands = CommandTable.with_builtins(is_managed=self._is_managed)
        self._stopping = False
        self._stopped.set()
        logger.info("daemon stopped", reason=reason)

    async def _release_state(self) -> None:
        """Stop handing out the state's sync positions; close the state if this orchestrator opened it itself."""
        self._sync_tokens = None
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
