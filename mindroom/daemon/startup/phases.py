"""The start-up phases other than `state` (`startup.state`), `accounts` (`startup.accounts`) and `rooms`
(`daemon.room_setup.set_up_rooms`): each takes what earlier phases made and returns what later ones need.

A phase that starts something says how it stops, on the `PhaseStops` it is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindroom import ai
from mindroom.bots.approvals.auto_approve_command import auto_approve_command
from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.approvals.timed_approvals import TimedApprovals
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.directory import Directory
from mindroom.bots.pipeline_capabilities import RunClock, TurnStores
from mindroom.bots.recovery import recover_interrupted
from mindroom.bots.runtime import Entity, LiveCell, LiveState
from mindroom.bots.usage.command import usage_command
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.config.environment import DaemonEnvironment
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.daemon.bot_start import BotDown
from mindroom.daemon.chat_settings import register_settings_commands, with_chat_settings
from mindroom.daemon.live import build_live_state
from mindroom.daemon.mcp import MCPLifecycle
from mindroom.daemon.mind import start_mind
from mindroom.daemon.reload import ApplyChanges, ReloadCoordinator, ReloadOutcome, reload_command
from mindroom.daemon.scheduling.command import schedule_command
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.start_check import check_start
from mindroom.daemon.startup.accounts import Accounts, Bot
from mindroom.daemon.startup.plan import PhaseStops
from mindroom.daemon.watch import ConfigWatcher, EnvFile
from mindroom.daemon.wiring import RunningDaemon
from mindroom.logging_config import get_logger
from mindroom.plugins.discovery import plugin_watch_paths
from mindroom.state.attachments import AttachmentStore
from mindroom.state.backend import StateStores
from mindroom.state.journal import TurnJournal
from mindroom.state.schedules import ScheduleStore
from mindroom.tool_system.isolation import close_tool_runtime
from mindroom.tool_system.runtime_context import set_registry_provider

if TYPE_CHECKING:
    from mindroom.matrix.appservice.server import Appservice

__all__ = [
    "ReloadOptions",
    "Reloading",
    "announce_ready",
    "build_run",
    "prepare_live_state",
    "recover",
    "start_mcp",
    "start_reloading",
    "start_schedules",
    "start_syncing",
]

# The start-up's lines keep the logger operators know them by.
logger = get_logger("mindroom.daemon.orchestrator")
_LOGGED_BY_THE_BUILD = frozenset({"tools", "plugins"})


async def prepare_live_state(environment: DaemonEnvironment) -> LiveState:
    """`live state`: config, plugins, tools and the hook registry, built off the loop (as on reload); needs no lock.

    What `mindroom config validate` refuses is refused here in the same words (`check_start`), and what it warns
    about the log says (the build itself logs the tools and plugins it goes without).
    """
    checked = await asyncio.to_thread(check_start, environment.runtime_paths)
    if checked.build is None:
        raise checked.error()
    for finding in checked.warnings:
        if finding.topic not in _LOGGED_BY_THE_BUILD:
            logger.warning("config warning", topic=finding.topic, warning=str(finding))
    return checked.build.live


async def build_run(
    live: LiveState,
    stores: StateStores,
    paths: RuntimePaths,
    *,
    server_name: str,
    run_since: float | None,
    commands: CommandTable,
    entities: Mapping[str, Entity],
    stops: PhaseStops,
) -> RunningDaemon:
    """`run`: the chat's settings over `live`, the cell, who is where, the turns' stores, memory and knowledge;
    `!auto_approve` and `!memory` in `commands`, and tools told where the live hook registry is.

    `entities` is the map the `accounts` phase fills; `run_since` the start of the run this one continues.
    """
    live = await with_chat_settings(live, stores.overrides, paths)
    cell = LiveCell(live)
    desk = ApprovalDesk(stores.approvals, TimedApprovals(stores.grants, lambda: cell.live.config))
    directory = Directory(server_name, stores.rooms, entities=entities)
    usage = None
    if stores.usage is not None:
        usage = UsageLedger(stores.usage, lambda: cell.live.config.storage.usage_retention_days)
        await usage.start()
        stops.add("usage", lambda _: usage.stop())  # after the bots' last turns, before the state closes
        commands.register(usage_command(usage))
    turn_stores = TurnStores(
        stores.journal,
        stores.answers,
        AttachmentStore(paths.storage_root),
        desk,
        session_url=stores.session_url,
        usage=usage,
    )
    clock = RunClock.starting(run_since)  # before the knowledge bases start: messages sent meanwhile are new
    mind = await start_mind(paths, stores.session_url, live.config, commands)
    running = RunningDaemon(cell=cell, directory=directory, stores=turn_stores, paths=paths, clock=clock, mind=mind)
    if usage is not None:
        usage.tell_admins = lambda text: _tell_admin_room(cell, directory, text)
    commands.register(auto_approve_command(desk, lambda: directory.bot_user_ids.values()))
    set_registry_provider(lambda: cell.live.registry)
    stops.add("background hooks", lambda stopping: cell.live.registry.background.drain(stopping.grace_s))
    stops.add("isolated plugins", lambda _: asyncio.to_thread(cell.live.registry.isolated.close))
    stops.add("memory", lambda stopping: mind.stop(stopping.grace_s))
    stops.add("tools", lambda _: close_tool_runtime())  # tools stop resolving the registry set above
    stops.add("model clients and stores", lambda _: ai.close_caches())
    return running


async def _tell_admin_room(cell: LiveCell, directory: Directory, text: str) -> None:
    """The router posts `text` as a notice in the admin room, when the config names one it is in."""
    room_id = directory.room_ids.get(cell.live.config.admin_room or "")
    router = directory.entities.get(ROUTER_AGENT_NAME)
    if room_id is not None and router is not None:
        await router.client.send_message(room_id, text, msgtype="m.notice")


async def start_mcp(running: RunningDaemon, stops: PhaseStops) -> MCPLifecycle:
    """`mcp servers`: the config's MCP servers, connecting in the background while the bots sign in."""
    mcp = MCPLifecycle(running.cell, running.directory, running.paths)
    stops.add("mcp", lambda _: mcp.stop())
    await mcp.apply(running.live.config)
    return mcp


async def start_syncing(bots: Mapping[str, Bot], approvals: ApprovalDesk | None, appservice: Appservice | None) -> None:
    """`sync`: approvals whose time ran out while the daemon was down expire first, then every bot syncs, and
    once all are ready the appservice hands out what it queued."""
    assert approvals is not None  # expired before syncing (see `expire_overdue`)
    await approvals.expire_overdue({name: bot.client for name, bot in bots.items()})
    for bot in bots.values():
        bot.start_sync()
    await asyncio.gather(*(bot.wait_ready() for bot in bots.values()))
    if appservice is not None:  # every bot receives: what was queued is handed out now
        appservice.open()


async def recover(accounts: Accounts, journal: TurnJournal) -> None:
    """`recovery`: each bot's turns cut short by the last stop are finished, and the admin room hears which bots
    stay down."""
    for bot in accounts.bots.values():
        await recover_interrupted(bot, journal, bot.handlers)
    await accounts.tell_admin_room(accounts.down)


def start_schedules(
    running: RunningDaemon, store: ScheduleStore, commands: CommandTable, stops: PhaseStops
) -> Scheduler:
    """`schedules`: the stored schedules fire from now on, and `!schedule` is in `commands`."""
    scheduler = Scheduler(running.cell, running.directory, store)
    stops.add("scheduler", lambda _: scheduler.stop())
    scheduler.start()
    commands.register(schedule_command(scheduler, running.directory))
    return scheduler


@dataclass(frozen=True, slots=True)
class ReloadOptions:
    """How reloads are asked for: the file watcher (and its debounce), and who hears each outcome."""

    env_file: EnvFile
    watch: bool = True
    debounce_s: float = 0.25
    on_reload: Callable[[ReloadOutcome], None] | None = None


@dataclass(frozen=True, slots=True)
class Reloading:
    """What the `reload` phase started: the coordinator, and the watcher of the config and plugins (if any)."""

    reloader: ReloadCoordinator
    watcher: ConfigWatcher | None


def start_reloading(
    running: RunningDaemon,
    apply: ApplyChanges,
    options: ReloadOptions,
    stores: StateStores,
    commands: CommandTable,
    stops: PhaseStops,
) -> Reloading:
    """`reload`: a coordinator that builds live state afresh and applies its entity changes with `apply`;
    `!reload-plugins` and the settings commands in `commands`; with `options.watch`, the file watcher."""
    paths, cell = running.paths, running.cell
    reloader = ReloadCoordinator(
        cell,
        running.directory,
        build=lambda previous: build_live_state(paths, previous=previous),
        apply=apply,
        on_outcome=options.on_reload,
        env_file=options.env_file,
    )
    stops.add("reloader", lambda _: reloader.stop())
    commands.register(reload_command(reloader))
    register_settings_commands(commands, stores.overrides, reloader, paths)
    watcher = None
    if options.watch:
        watcher = ConfigWatcher(
            paths.config_path,
            lambda: plugin_watch_paths(cell.live.config, paths),
            reloader.on_files_changed,
            debounce_s=options.debounce_s,
            included_paths=lambda: cell.live.config.included_paths,
        )
        stops.add("watcher", lambda _: watcher.stop())
        watcher.start()
    return Reloading(reloader, watcher)


def announce_ready(live: LiveState, directory: Directory, down: Mapping[str, BotDown], *, postgres: bool) -> None:
    """`ready`: the log says what runs, and what the first turn needs is imported in the background."""
    logger.info(
        "daemon ready",
        agents=list(live.config.agents),
        teams=list(live.config.teams),
        rooms=dict(directory.room_ids),
        plugins=[plugin.name for plugin in live.plugins],
        hooks=len(live.registry),
        down=sorted(down),
    )
    ai.preload_in_background(postgres=postgres)
