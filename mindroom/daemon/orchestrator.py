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
from functools import partial
from pathlib import Path

from mindroom import ai
from mindroom.bots.approvals import ApprovalDesk
from mindroom.bots.bot import EntityBot, EventHandler
from mindroom.bots.commands import CommandTable
from mindroom.bots.members import handle_member_event
from mindroom.bots.reactions import handle_reaction_event
from mindroom.bots.recovery import recover_interrupted
from mindroom.bots.runtime import DaemonRuntime, LiveState
from mindroom.bots.turn import handle_message_event
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome, reload_command
from mindroom.daemon.scheduling.command import schedule_command
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.standby import daemon_state
from mindroom.daemon.watch import ConfigWatcher
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient, MatrixDeviceError, MatrixEventKind, MatrixRequestError
from mindroom.matrix.recovery_key import RecoveryKeys
from mindroom.matrix.rooms import RoomEntry
from mindroom.plugins.discovery import plugin_watch_paths
from mindroom.private_files import private_dir, warn_if_shared
from mindroom.state.attachments import AttachmentStore
from mindroom.state.backend import StateBackend, StateStores
from mindroom.state.crypto import CryptoVault
from mindroom.state.tokens import SyncTokens
from mindroom.tool_system.isolation import shared_pool
from mindroom.tool_system.runtime_context import set_registry_provider

__all__ = ["Orchestrator", "prepare_live_state"]

logger = get_logger(__name__)


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
        self.runtime: DaemonRuntime | None = None
        self.bots: dict[str, EntityBot] = {}
        self.reloader: ReloadCoordinator | None = None
        self.scheduler: Scheduler | None = None
        self.commands = CommandTable.with_builtins()
        self._watcher: ConfigWatcher | None = None
        self._stopping = False
        self._stopped = asyncio.Event()
        self.state = state
        self._owns_state = state is None
        self._sync_tokens: SyncTokens | None = None
        self._crypto_vault: CryptoVault | None = None
        self._recovery_keys = RecoveryKeys.from_environment(environment.values, environment.storage_root)
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

    async def start(self) -> DaemonRuntime:
        """Log every bot in, create and join rooms, start syncing, wait until all bots are ready, then schedule."""
        paths = self.runtime_paths
        homeserver = self._homeserver()
        live = self._prepared or await prepare_live_state(self.environment)
        self._prepared = None
        warn_if_shared(paths.storage_root)
        private_dir(paths.storage_root)
        stores = await self._open_state(live)
        runtime = DaemonRuntime(
            live=live,
            runtime_paths=paths,
            env=paths.env_values,
            server_name=homeserver.server_name,
            journal=stores.journal,
            room_memory=stores.rooms,
            answers=stores.answers,
            attachments=AttachmentStore(paths.storage_root),
            bots=self.bots,
            approvals=ApprovalDesk(stores.approvals),
            session_url=stores.session_url,
        )
        if self._run_since is not None:
            runtime.started_at_ms = int(self._run_since * 1000)
        self.runtime = runtime
        set_registry_provider(lambda: runtime.live.registry)
        names = [ROUTER_AGENT_NAME, *live.config.agents]
        for name in names:
            self.bots[name] = self._make_bot(name, runtime, live)
        logger.info("logging in", bots=names, homeserver=homeserver.url)
        await self._start_bots()
        await self._setup_rooms(runtime, live, live.config.managed_room_keys(), self.bots)
        await self._expire_approvals(runtime)
        for bot in self.bots.values():
            bot.start_sync()
        await asyncio.gather(*(bot.wait_ready() for bot in self.bots.values()))
        for bot in self.bots.values():
            await recover_interrupted(bot, self.commands)
        self.scheduler = Scheduler(runtime, stores.schedules)
        self.scheduler.start()
        self.commands.register(schedule_command(self.scheduler))
        self.reloader = ReloadCoordinator(
            runtime,
            build=lambda previous: build_live_state(paths, previous=previous, strict=True),
            apply=self.apply_entity_changes,
            on_outcome=self._on_reload,
        )
        self.commands.register(reload_command(self.reloader))
        if self._watch:
            self._watcher = ConfigWatcher(
                paths.config_path,
                lambda: plugin_watch_paths(runtime.live.config, paths),
                self.reloader.on_files_changed,
                debounce_s=self._reload_debounce_s,
            )
            self._watcher.start()
        logger.info(
            "daemon ready",
            agents=list(live.config.agents),
            rooms=dict(runtime.room_ids),
            plugins=[plugin.name for plugin in live.plugins],
            hooks=len(live.registry),
        )
        ai.preload_in_background(postgres=self.state is not None and self.state.kind == "postgresql")
        return runtime

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

    async def _start_bots(self) -> None:
        """Log every bot in; an agent whose device cannot go on is left out (it logged the fix), the others run."""
        results = await asyncio.gather(*(bot.start() for bot in self.bots.values()), return_exceptions=True)
        for name, result in zip(list(self.bots), results, strict=True):
            if isinstance(result, MatrixDeviceError) and name != ROUTER_AGENT_NAME:
                logger.error("agent not started; the other bots run", agent=name, error=str(result))
                await self.bots.pop(name).client.close()
            elif isinstance(result, BaseException):
                raise result

    async def _expire_approvals(self, runtime: DaemonRuntime) -> None:
        """Before syncing: approvals whose time ran out while the daemon was down are marked so on their cards.

        Before, so an answer that arrived meanwhile finds the card already expired, as it would have been.
        """
        assert runtime.approvals is not None
        expired = await runtime.approvals.expire_overdue({name: bot.client for name, bot in self.bots.items()})
        if expired:
            logger.info("approvals expired while the daemon was down", count=expired)

    def _make_bot(self, name: str, runtime: DaemonRuntime, live: LiveState) -> EntityBot:
        homeserver = self._homeserver()
        config = live.config
        is_router = name == ROUTER_AGENT_NAME
        client = MatrixBotClient(
            name,
            homeserver.url,
            homeserver.server_name,
            runtime.runtime_paths.storage_root,
            registration_shared_secret=homeserver.registration_shared_secret,
            password=config.router.password if is_router else config.agents[name].password,
            display_name=config.router.display_name if is_router else config.agents[name].display_name,
            account_prefix=homeserver.account_prefix,
            new_crypto_device=self._new_crypto_device,
            sync_tokens=self._sync_tokens,
            crypto_vault=self._crypto_vault,
            recovery_keys=self._recovery_keys,
        )
        handlers: dict[MatrixEventKind, EventHandler] = {
            MatrixEventKind.MESSAGE: partial(handle_message_event, commands=self.commands),
            MatrixEventKind.REACTION: handle_reaction_event,
        }
        if is_router:  # people joining and leaving are announced by the router alone
            handlers[MatrixEventKind.MEMBER] = handle_member_event
        return EntityBot(name, runtime, client, handlers)

    async def _setup_rooms(
        self, runtime: DaemonRuntime, live: LiveState, keys: Iterable[str], joiners: Mapping[str, EntityBot]
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
            if not await self._room_is_ours(runtime, router, key, entry):
                with contextlib.suppress(MindroomError):
                    await router.client.leave(room_id)
                continue
            runtime.room_memory.remember(ROUTER_AGENT_NAME, room_id, "created" if entry.created else "verified", key)
            if room_config is not None and room_config.encrypted and not entry.created:
                await router.client.enable_encryption(room_id)
            members = [name for name, agent in config.agents.items() if key in agent.rooms]
            invite = [runtime.bot_user_ids[name] for name in members if name in runtime.bot_user_ids]
            await router.client.invite_missing(room_id, [*invite, *config.room_defaults.invite_users])
            router.joined_rooms.add(room_id)
            runtime.room_ids[key] = room_id
            await asyncio.gather(*(joiners[name].join(room_id) for name in members if name in joiners))

    @staticmethod
    async def _room_is_ours(runtime: DaemonRuntime, router: EntityBot, key: str, entry: RoomEntry) -> bool:
        if entry.created or key.startswith("!") or runtime.room_memory.known(entry.room_id):
            return True
        if await router.client.room_is_ours(entry.room_id, runtime.bot_user_ids.values()):
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
        runtime = self._live()
        live = runtime.live
        config = live.config
        bots = self.bots
        removed = {name: bots[name] for name in changes.removed if name in bots}
        await asyncio.gather(
            *(bot.stop("removed from config", grace_s, leave_rooms=True) for bot in removed.values()),
            return_exceptions=True,
        )
        for name in changes.removed:
            bots.pop(name, None)
            runtime.bot_user_ids.pop(name, None)
        if ROUTER_AGENT_NAME in changes.changed:
            await bots[ROUTER_AGENT_NAME].client.ensure_display_name(config.router.display_name)
        restart = [name for name in changes.changed if name != ROUTER_AGENT_NAME and name in bots]
        retiring = {name: bots[name] for name in restart}
        fresh = {name: self._make_bot(name, runtime, live) for name in (*changes.added, *restart)}
        await asyncio.gather(*(bot.start() for bot in fresh.values()))
        for name, previous in retiring.items():
            bot = fresh[name]
            bot.joined_rooms |= previous.joined_rooms
            for key in set(old.config.agents[name].rooms) - set(config.agents[name].rooms):
                room_id = runtime.room_ids.get(key)
                if room_id is not None and room_id in bot.joined_rooms:
                    with contextlib.suppress(MindroomError):
                        await bot.leave(room_id)
        keys = [
            key
            for key in config.managed_room_keys()
            if key in changes.new_rooms or any(key in config.agents[name].rooms for name in fresh)
        ]
        await self._setup_rooms(runtime, live, keys, fresh)
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

    def _live(self) -> DaemonRuntime:
        if self.runtime is None:
            msg = "the daemon is not running"
            raise RuntimeError(msg)
        return self.runtime

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0) -> None:
        """Stop reloading, watching and scheduling, then every bot (in-flight answers get `grace_s`), then state."""
        if self._stopping:
            await self._stopped.wait()
            return
        runtime = self.runtime
        if runtime is None:
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
        set_registry_provider(None)
        shared_pool().close()
        await ai.close_caches()
        await self._release_state()
        self.runtime = None
        self.bots = {}
        self.reloader = None
        self.scheduler = None
        self._watcher = None
        self.commands = CommandTable.with_builtins()
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
