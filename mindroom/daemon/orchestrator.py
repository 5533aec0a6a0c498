"""The composition root: config, plugins and hook registry, one bot per agent plus the router, rooms.

`Orchestrator` starts everything in order (log in, create/join rooms, sync, ready, then the scheduler
and the file watcher) and stops it in reverse. It holds the one mutable reference to the live config
and hook registry (`DaemonRuntime`); a reload (`mindroom.daemon.reload`) swaps them and asks the orchestrator
to restart only the entities whose config changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from dotenv import dotenv_values

from mindroom.ai import close_caches
from mindroom.ai.tools import foreign_tool_specs
from mindroom.bots.bot import EntityBot
from mindroom.bots.runtime import DaemonRuntime
from mindroom.bots.turn import recover_interrupted
from mindroom.config.loading import load_config
from mindroom.config.main import Config
from mindroom.config.settings import MindroomSettings, load_settings
from mindroom.constants import DEFAULT_STORAGE_DIRNAME, ROUTER_AGENT_NAME, RuntimePaths
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator
from mindroom.daemon.scheduling.scheduler import Scheduler, ScheduleStore
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import DEFAULT_ACCOUNT_PREFIX, MatrixBotClient
from mindroom.plugins.discovery import build_registry, load_plugins
from mindroom.plugins.loader import Plugin
from mindroom.state.journal import DaemonState
from mindroom.tool_system.registry import ToolCatalog, build_tool_catalog
from mindroom.tool_system.runtime_context import set_registry_provider

__all__ = ["HomeserverSettings", "Orchestrator", "read_environment"]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HomeserverSettings:
    """Where the homeserver is and how bot accounts are created there."""

    url: str
    server_name: str
    registration_shared_secret: str | None
    account_prefix: str = DEFAULT_ACCOUNT_PREFIX


def read_environment(config_path: Path) -> dict[str, str]:
    """The process environment, completed by a `.env` file beside the config (the environment wins)."""
    env: dict[str, str] = {}
    dotenv = config_path.parent / ".env"
    if dotenv.is_file():
        env.update({k: v for k, v in dotenv_values(dotenv).items() if v is not None})
    env.update(os.environ)
    return env


def _server_name_from_url(url: str) -> str:
    host = urlparse(url).hostname or "localhost"
    return "localhost" if host in ("127.0.0.1", "::1") else host


class Orchestrator:
    """Runs the daemon: `await start()`, then `await stop()` (or use `async with`)."""

    def __init__(
        self,
        config_path: Path,
        *,
        storage_path: Path | None = None,
        homeserver: HomeserverSettings | None = None,
        env: Mapping[str, str] | None = None,
        watch: bool = True,
        reload_debounce_s: float = 0.25,
    ) -> None:
        self.config_path = config_path.resolve()
        self.env = dict(env) if env is not None else read_environment(self.config_path)
        self.settings: MindroomSettings = load_settings(self.config_path.parent / ".env")
        storage = storage_path or self.settings.storage_path or (self.config_path.parent / DEFAULT_STORAGE_DIRNAME)
        self.runtime_paths = RuntimePaths(
            config_path=self.config_path, storage_root=Path(storage).resolve(), env_values=self.env
        )
        self._homeserver = homeserver
        self._watch = watch
        self._reload_debounce_s = reload_debounce_s
        self.runtime: DaemonRuntime | None = None
        self.reloader: ReloadCoordinator | None = None
        self._stopping = False
        self._stopped = asyncio.Event()

    def _homeserver_settings(self) -> HomeserverSettings:
        if self._homeserver is not None:
            return self._homeserver
        url = self.env.get("MATRIX_HOMESERVER") or self.settings.matrix_homeserver
        if not url:
            raise ConfigError(self.config_path, ["MATRIX_HOMESERVER is not set (and no embedded homeserver runs)"])
        secret = self.env.get("MATRIX_REGISTRATION_SHARED_SECRET")
        if secret is None and self.settings.matrix_registration_shared_secret is not None:
            secret = self.settings.matrix_registration_shared_secret.get_secret_value()
        server_name = self.env.get("MATRIX_SERVER_NAME") or self.settings.matrix_server_name
        prefix = self.env.get("MINDROOM_ACCOUNT_PREFIX", DEFAULT_ACCOUNT_PREFIX)
        return HomeserverSettings(url, server_name or _server_name_from_url(url), secret, prefix)

    def load_config(self) -> Config:
        """Read and validate the config file with this daemon's environment."""
        return load_config(self.config_path, self.env)

    def build_tools(self, config: Config, plugins: tuple[Plugin, ...]) -> ToolCatalog:
        """The tool catalogue of a config and its plugins, as a reload builds it (unknown names are errors)."""
        return build_tool_catalog(config, plugins, adapt=foreign_tool_specs)

    async def start(self) -> DaemonRuntime:
        """Log every bot in, create and join rooms, start syncing, wait until all bots are ready, then schedule."""
        config = self.load_config()
        homeserver = self._homeserver_settings()
        self._homeserver = homeserver
        storage_root = self.runtime_paths.storage_root
        storage_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        loaded = load_plugins(config, self.runtime_paths)
        tools = build_tool_catalog(config, loaded.plugins, adapt=foreign_tool_specs, strict=not loaded.errors)
        registry = build_registry(config, loaded.plugins)
        runtime = DaemonRuntime(
            config=config,
            registry=registry,
            runtime_paths=self.runtime_paths,
            env=self.env,
            server_name=homeserver.server_name,
            state=DaemonState(storage_root / "state" / "daemon.db"),
            plugins=loaded.plugins,
            tools=tools,
        )
        self.runtime = runtime
        set_registry_provider(lambda: runtime.registry)
        names = [ROUTER_AGENT_NAME, *config.agents]
        for name in names:
            runtime.bots[name] = self._make_bot(name, runtime, homeserver)
        logger.info("logging in", bots=names, homeserver=homeserver.url)
        await asyncio.gather(*(bot.start() for bot in runtime.bots.values()))
        await self._setup_rooms(runtime, _room_keys(config), runtime.bots)
        for bot in runtime.bots.values():
            bot.start_sync()
        await asyncio.gather(*(bot.wait_ready() for bot in runtime.bots.values()))
        for bot in runtime.bots.values():
            await recover_interrupted(bot)
        runtime.scheduler = Scheduler(runtime, ScheduleStore(storage_root / "state" / "schedules.db"))
        runtime.scheduler.start()
        self.reloader = runtime.reloader = ReloadCoordinator(self, runtime, debounce_s=self._reload_debounce_s)
        if self._watch:
            self.reloader.start_watching()
        logger.info(
            "daemon ready",
            agents=list(config.agents),
            rooms=dict(runtime.room_ids),
            plugins=[plugin.name for plugin in loaded.plugins],
            hooks=len(registry),
        )
        return runtime

    def _make_bot(self, name: str, runtime: DaemonRuntime, homeserver: HomeserverSettings | None = None) -> EntityBot:
        homeserver = homeserver or self._homeserver_settings()
        config = runtime.config
        password = config.router.password if name == ROUTER_AGENT_NAME else config.agents[name].password
        display = config.router.display_name if name == ROUTER_AGENT_NAME else config.agents[name].display_name
        client = MatrixBotClient(
            name,
            homeserver.url,
            homeserver.server_name,
            runtime.runtime_paths.storage_root,
            registration_shared_secret=homeserver.registration_shared_secret,
            password=password,
            display_name=display,
            account_prefix=homeserver.account_prefix,
        )
        return EntityBot(name, runtime, client)

    async def _setup_rooms(self, runtime: DaemonRuntime, keys: Iterable[str], joiners: Mapping[str, EntityBot]) -> None:
        """The router creates or joins these rooms and invites their agents and users; `joiners` among them join."""
        config = runtime.config
        router = runtime.bots[ROUTER_AGENT_NAME]
        for key in keys:
            members = [name for name, agent in config.agents.items() if key in agent.rooms]
            room_config = config.rooms.get(key)
            invite = [runtime.bot_user_ids[name] for name in members if name in runtime.bot_user_ids]
            invite += list(config.room_defaults.invite_users)
            room_id = await router.client.ensure_room(
                key,
                name=(room_config.name if room_config and room_config.name else key),
                topic=(room_config.topic or room_config.description) if room_config else None,
                invite=invite,
            )
            router.joined_rooms.add(room_id)
            runtime.room_ids[key] = room_id
            await asyncio.gather(*(joiners[name].join(room_id) for name in members if name in joiners))

    async def apply_entity_changes(self, old: Config, changes: EntityChanges, grace_s: float = 30.0) -> None:
        """After a reload's swap: removed agents leave their rooms and stop, added ones log in and join, new
        rooms are set up, and changed agents restart. Untouched entities are left alone; the router changes
        in place.

        A changed agent hands over without a gap: its new instance logs in and joins first, then the old
        one stops syncing and the new one starts from the sync token the old one stored, while the old
        one's in-flight turns finish (persisted dedup keeps every event to one answer).
        """
        runtime = self._live()
        config = runtime.config
        removed = {name: runtime.bots[name] for name in changes.removed if name in runtime.bots}
        await asyncio.gather(
            *(bot.stop("removed from config", grace_s, leave_rooms=True) for bot in removed.values()),
            return_exceptions=True,
        )
        for name in changes.removed:
            runtime.bots.pop(name, None)
            runtime.bot_user_ids.pop(name, None)
        if ROUTER_AGENT_NAME in changes.changed:
            await runtime.bots[ROUTER_AGENT_NAME].client.ensure_display_name(config.router.display_name)
        restart = [name for name in changes.changed if name != ROUTER_AGENT_NAME and name in runtime.bots]
        retiring = {name: runtime.bots[name] for name in restart}
        fresh = {name: self._make_bot(name, runtime) for name in (*changes.added, *restart)}
        await asyncio.gather(*(bot.start() for bot in fresh.values()))
        for name, previous in retiring.items():
            bot = fresh[name]
            bot.joined_rooms |= previous.joined_rooms
            for key in set(old.agents[name].rooms) - set(config.agents[name].rooms):
                room_id = runtime.room_ids.get(key)
                if room_id is not None and room_id in bot.joined_rooms:
                    with contextlib.suppress(MindroomError):
                        await bot.leave(room_id)
        keys = [
            key
            for key in _room_keys(config)
            if key in changes.new_rooms or any(key in config.agents[name].rooms for name in fresh)
        ]
        await self._setup_rooms(runtime, keys, fresh)
        await asyncio.gather(*(previous.stop_sync() for previous in retiring.values()))
        for name, bot in fresh.items():
            runtime.bots[name] = bot
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
        """Stop watching and scheduling, then every bot (in-flight answers get `grace_s`), then close state."""
        if self._stopping:
            await self._stopped.wait()
            return
        runtime = self.runtime
        if runtime is None:
            return
        self._stopping = True
        logger.info("daemon stopping", reason=reason, grace_s=grace_s)
        if self.reloader is not None:
            await self.reloader.stop()
        if runtime.scheduler is not None:
            await runtime.scheduler.stop()
        await asyncio.gather(*(bot.stop(reason, grace_s) for bot in runtime.bots.values()), return_exceptions=True)
        set_registry_provider(None)
        if runtime.scheduler is not None:
            runtime.scheduler.store.close()
        runtime.state.close()
        await close_caches()
        self.runtime = None
        self.reloader = None
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
        await self.stop(grace_s=self.shutdown_grace_s)

    @property
    def shutdown_grace_s(self) -> float:
        """How long in-flight answers may take at shutdown (`MINDROOM_SHUTDOWN_GRACE_S`, default 10 s)."""
        try:
            return max(0.0, float(self.env.get("MINDROOM_SHUTDOWN_GRACE_S", "10")))
        except ValueError:
            return 10.0


def _room_keys(config: Config) -> list[str]:
    """Every room the daemon manages: the config's rooms, then the admin room."""
    keys = config.all_room_keys()
    if config.admin_room and config.admin_room not in keys:
        keys.append(config.admin_room)
    return keys
