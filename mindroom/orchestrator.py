"""The composition root: config, plugins and hook registry, one bot per agent plus the router, rooms.

`Orchestrator` starts everything in order (log in, create/join rooms, sync, ready) and stops it in
reverse. It holds the one mutable reference to the live config and hook registry (`DaemonRuntime`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from dotenv import dotenv_values

from mindroom.ai import close_caches
from mindroom.bot import EntityBot
from mindroom.config.loading import load_config
from mindroom.config.main import Config
from mindroom.config.settings import MindroomSettings, load_settings
from mindroom.constants import DEFAULT_STORAGE_DIRNAME, ROUTER_AGENT_NAME, RuntimePaths
from mindroom.errors import ConfigError
from mindroom.logging_config import get_logger
from mindroom.matrix import DEFAULT_ACCOUNT_PREFIX, MatrixBotClient
from mindroom.plugins.discovery import build_registry, load_plugins
from mindroom.runtime import DaemonRuntime
from mindroom.state_store import HandledEvents
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
    ) -> None:
        self.config_path = config_path.resolve()
        self.env = dict(env) if env is not None else read_environment(self.config_path)
        self.settings: MindroomSettings = load_settings(self.config_path.parent / ".env")
        storage = storage_path or self.settings.storage_path or (self.config_path.parent / DEFAULT_STORAGE_DIRNAME)
        self.runtime_paths = RuntimePaths(
            config_path=self.config_path, storage_root=Path(storage).resolve(), env_values=self.env
        )
        self._homeserver = homeserver
        self.runtime: DaemonRuntime | None = None
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

    async def start(self) -> DaemonRuntime:
        """Log every bot in, create and join rooms, start syncing, and wait until all bots are ready."""
        config = self.load_config()
        homeserver = self._homeserver_settings()
        storage_root = self.runtime_paths.storage_root
        storage_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        loaded = load_plugins(config, self.runtime_paths)
        registry = build_registry(config, loaded.plugins)
        runtime = DaemonRuntime(
            config=config,
            registry=registry,
            runtime_paths=self.runtime_paths,
            env=self.env,
            server_name=homeserver.server_name,
            handled=HandledEvents(storage_root / "state" / "handled_events.db"),
            plugins=loaded.plugins,
        )
        self.runtime = runtime
        set_registry_provider(lambda: runtime.registry)
        names = [ROUTER_AGENT_NAME, *config.agents]
        for name in names:
            runtime.bots[name] = self._make_bot(name, runtime, homeserver)
        logger.info("logging in", bots=names, homeserver=homeserver.url)
        await asyncio.gather(*(bot.start() for bot in runtime.bots.values()))
        await self._setup_rooms(runtime)
        for bot in runtime.bots.values():
            bot.start_sync()
        await asyncio.gather(*(bot.wait_ready() for bot in runtime.bots.values()))
        logger.info(
            "daemon ready",
            agents=list(config.agents),
            rooms=dict(runtime.room_ids),
            plugins=[plugin.name for plugin in loaded.plugins],
            hooks=len(registry),
        )
        return runtime

    def _make_bot(self, name: str, runtime: DaemonRuntime, homeserver: HomeserverSettings) -> EntityBot:
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

    async def _setup_rooms(self, runtime: DaemonRuntime) -> None:
        """The router creates or joins every configured room and invites its agents and users; agents join."""
        config = runtime.config
        router = runtime.bots[ROUTER_AGENT_NAME]
        for key in config.all_room_keys():
            members = [name for name, agent in config.agents.items() if key in agent.rooms]
            room_config = config.rooms.get(key)
            invite = [runtime.bot_user_ids[name] for name in members] + list(config.room_defaults.invite_users)
            room_id = await router.client.ensure_room(
                key,
                name=(room_config.name if room_config and room_config.name else key),
                topic=(room_config.topic or room_config.description) if room_config else None,
                invite=invite,
            )
            router.joined_rooms.add(room_id)
            runtime.room_ids[key] = room_id
            await asyncio.gather(*(runtime.bots[name].join(room_id) for name in members))

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0) -> None:
        """Stop every bot (in-flight answers get `grace_s`), then close shared state."""
        runtime = self.runtime
        if runtime is None:
            return
        await asyncio.gather(*(bot.stop(reason, grace_s) for bot in runtime.bots.values()), return_exceptions=True)
        set_registry_provider(None)
        runtime.handled.close()
        await close_caches()
        self.runtime = None
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
        await self.stop()
