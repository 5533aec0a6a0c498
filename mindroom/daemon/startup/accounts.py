"""The `accounts` phase: the appservice listener, then one Matrix account and device per bot, signed in.

`BotFactory` is how this run makes a bot (at start, and for agents a reload adds or changes); `Accounts`
is what the phase hands on: the running bots, those that stay down for their device, and the factory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindroom.bots.bot import EntityBot
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.runtime import LiveState
from mindroom.config.environment import HomeserverSettings
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.bot_start import BotDown, NewDevices, start_bots, tell_admin_room
from mindroom.daemon.startup.plan import PhaseStops
from mindroom.daemon.startup.state import StateHolder
from mindroom.daemon.wiring import RunningDaemon, event_handlers
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient
from mindroom.matrix.crypto.recovery_key import RecoveryKeys

if TYPE_CHECKING:
    from mindroom.matrix.appservice.server import Appservice

__all__ = ["Accounts", "Bot", "BotFactory", "Devices", "sign_in"]

# The start-up's lines keep the logger operators know them by.
logger = get_logger("mindroom.daemon.orchestrator")

Bot = EntityBot[MatrixBotClient]
"""A bot of the running daemon, with its real Matrix client."""


@dataclass(frozen=True, slots=True)
class Devices:
    """Which bots may replace a lost crypto store with a new device, and the key their crypto state opens with."""

    new: NewDevices
    recovery_keys: RecoveryKeys


@dataclass(frozen=True, slots=True)
class BotFactory:
    """How this run makes a bot: its homeserver, its devices, the state's stores and the pipeline's handlers."""

    homeserver: HomeserverSettings
    running: RunningDaemon
    commands: CommandTable
    devices: Devices
    state: StateHolder
    appservice: Appservice | None

    def make(self, name: str, live: LiveState) -> Bot:
        """Bot `name` of `live`'s config, not yet signed in."""
        homeserver, running = self.homeserver, self.running
        config = live.config
        is_router = name == ROUTER_AGENT_NAME
        entity = config.router if is_router else config.responders()[name]
        stores = self.state.stores
        client = MatrixBotClient(
            name,
            homeserver.url,
            homeserver.server_name,
            running.paths.storage_root,
            registration_shared_secret=homeserver.registration_shared_secret,
            password=entity.password,
            display_name=entity.display_name,
            account_prefix=homeserver.account_prefix,
            new_crypto_device=self.devices.new.allows(name),
            sync_tokens=stores.sync_tokens if stores is not None else None,
            crypto_vault=stores.crypto if stores is not None else None,
            recovery_keys=self.devices.recovery_keys,
            appservice=self.appservice,
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


@dataclass(frozen=True, slots=True)
class Accounts:
    """The run's bots (the directory's entities), those that stay down for their device, and how to make more."""

    bots: dict[str, Bot]
    down: dict[str, BotDown]
    factory: BotFactory

    async def tell_admin_room(self, down: Mapping[str, BotDown]) -> None:
        """The admin room hears which bots stay down and the fix (the router posts it)."""
        running, router = self.factory.running, self.bots[ROUTER_AGENT_NAME]
        room_id = running.directory.room_ids.get(running.live.config.admin_room or "")
        if room_id is not None:
            await tell_admin_room(down, lambda text: router.client.send_message(room_id, text, msgtype="m.notice"))


async def sign_in(
    homeserver: HomeserverSettings,
    running: RunningDaemon,
    live: LiveState,
    *,
    devices: Devices,
    commands: CommandTable,
    state: StateHolder,
    bots: dict[str, Bot],
    stops: PhaseStops,
) -> Accounts:
    """Listen for the appservice's transactions, make the router and every agent and team into `bots`, and sign
    them in at once; a bot whose device cannot go on is left out of `bots` (its reason in `Accounts.down`)."""
    appservice: Appservice | None = None
    if homeserver.appservice_registration is not None:  # appservice mode: its server (aiohttp's) only then
        from mindroom.matrix.appservice.server import listening_appservice

        # Listening before the bots sign in: what the homeserver sends meanwhile is queued, not refused.
        appservice = await listening_appservice(homeserver.appservice_registration, homeserver.url)
    if appservice is not None:
        # The first of what receives to stop: what arrives from then on waits in the homeserver for the next run.
        stops.add("appservice", lambda _: appservice.stop())
    stops.add(
        "bots",
        lambda stopping: asyncio.gather(
            *(bot.stop(stopping.reason, stopping.grace_s) for bot in bots.values()), return_exceptions=True
        ),
    )
    factory = BotFactory(homeserver, running, commands, devices, state, appservice)
    names = [ROUTER_AGENT_NAME, *live.config.responders()]
    for name in names:
        bots[name] = factory.make(name, live)
    logger.info("logging in", bots=names, homeserver=homeserver.url)
    if unknown := devices.new.unknown(names):
        logger.warning("--new-device names no bot of this config", bots=unknown)
    down = await start_bots(bots)
    for name in down:
        del bots[name]
    return Accounts(bots, down, factory)
