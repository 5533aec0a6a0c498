"""`mindroom run`: signals, the state lock (or a standby's wait for it), the embedded homeserver, startup
progress, the ready banner, metrics, snapshots.

Kept apart from the command itself so the command stays a thin shell and these steps can be tested directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from mindroom import ai
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.config.loading import load_config
from mindroom.config.main import Config
from mindroom.config.providers import PROVIDER_ENV_VARS, detect_provider
from mindroom.constants import DEFAULT_STORAGE_DIRNAME
from mindroom.daemon.hooks_snapshot import write_snapshots_until_cancelled
from mindroom.daemon.metrics import MetricsCollector
from mindroom.daemon.metrics_server import MetricsServer
from mindroom.daemon.orchestrator import Orchestrator, prepare_live_state
from mindroom.daemon.reload import ReloadOutcome
from mindroom.daemon.standby import Takeover, daemon_state, wait_for_lock
from mindroom.daemon.wiring import RunningDaemon
from mindroom.homeserver.embedded import EmbeddedHomeserver, HumanAccount
from mindroom.hooks.registry import HookRegistry
from mindroom.logging_config import get_logger
from mindroom.matrix.recovery_key import RECOVERY_KEY_FILE_ENV, take_unshown_recovery_key
from mindroom.state.backend import StateBackend
from mindroom.state.errors import StateLockedError, StateLostError
from mindroom.state.snapshots import SnapshotStore

__all__ = [
    "DEFAULT_HUMAN_USER",
    "EmbeddedSession",
    "embedded_homeserver",
    "offline_warning",
    "ready_lines",
    "recovery_key_lines",
    "run_daemon",
    "show_progress",
    "start_metrics",
    "start_snapshots",
    "take_state",
]

logger = get_logger(__name__)

DEFAULT_HUMAN_USER = "@user:localhost"
_PROGRESS_POLL_S = 0.1


def offline_warning(config: Config, env: Mapping[str, str]) -> None:
    """Warn (naming the variables to set) when agents will answer with the offline model."""
    choice = detect_provider(env)
    for var, package in choice.skipped:
        logger.warning(
            "model provider key set but its package is missing", variable=var, install=f"pip install {package}"
        )
    used = {agent.model for agent in config.agents.values()}
    if any(config.models[name].provider == "offline" for name in used if name in config.models):
        logger.warning(
            "agents use the offline model; set one of these for a real model", set_one_of=list(PROVIDER_ENV_VARS)
        )


@dataclass(frozen=True, slots=True)
class EmbeddedSession:
    """The running embedded homeserver, the environment the orchestrator gets on it, and the human account."""

    server: EmbeddedHomeserver
    environment: DaemonEnvironment
    human: HumanAccount = field(repr=False)


@contextlib.asynccontextmanager
async def embedded_homeserver(
    environment: DaemonEnvironment, *, port: int | None = None
) -> AsyncIterator[EmbeddedSession]:
    """Start (and finally stop) the private homeserver; its human account is `MINDROOM_USER`, so the config
    (which reads that variable) authorizes it."""
    server = EmbeddedHomeserver(environment.storage_root, port=port)
    async with server:
        user_id = environment.values.get("MINDROOM_USER") or DEFAULT_HUMAN_USER
        human = await server.ensure_user(user_id)
        settings = HomeserverSettings(
            server.url, server.server_name, server.registration_shared_secret, environment.account_prefix
        )
        yield EmbeddedSession(server, environment.with_homeserver(settings, {"MINDROOM_USER": user_id}), human)


def _phase(orchestrator: Orchestrator) -> str:
    running = orchestrator.running
    if running is None:
        return "Loading config and plugins"
    directory = running.directory
    bots = len(orchestrator.bots)
    if len(directory.bot_user_ids) < bots:
        return f"Signing in {bots} accounts ({len(directory.bot_user_ids)}/{bots})"
    rooms = running.live.config.all_room_keys()
    if len(directory.room_ids) < len(rooms):
        return f"Joining {len(rooms)} rooms ({len(directory.room_ids)}/{len(rooms)})"
    synced = sum(1 for bot in orchestrator.bots.values() if bot.client.has_synced)
    return f"First sync ({synced}/{bots})"


async def show_progress(orchestrator: Orchestrator, console: Console) -> None:
    """Until cancelled: a spinner on a terminal, else one line per phase."""
    if console.is_terminal:
        with console.status("Starting") as status:
            while True:
                status.update(_phase(orchestrator) + "…")
                await asyncio.sleep(_PROGRESS_POLL_S)
    shown = ""
    while True:
        phase = _phase(orchestrator).split(" (", 1)[0]
        if phase != shown:
            console.print(f"{phase}…", highlight=False)
            shown = phase
        await asyncio.sleep(_PROGRESS_POLL_S)


def ready_lines(running: RunningDaemon, session: EmbeddedSession | None, storage_root: Path) -> list[str]:
    """The ready line (rooms and agents), then how to connect when the homeserver is the embedded one."""
    rooms = ", ".join(f"{key} ({room_id})" for key, room_id in running.directory.room_ids.items()) or "none"
    agents = ", ".join(running.live.config.agents) or "none"
    lines = [f"MindRoom is ready. Rooms: {rooms}. Agents: {agents}."]
    if session is not None:
        human = session.human
        lines += [
            f"Homeserver: {session.server.url} (embedded; data in {session.server.base_dir})",
            f"Sign in with any Matrix client as {human.user_id}",
            f"Password: {human.password} (shown once; kept in {session.server.user_file})"
            if human.created
            else f"Password: kept in {session.server.user_file}",
            "Or chat here: mindroom chat" + (f" --storage-path {storage_root}" if _non_default(storage_root) else ""),
        ]
    return lines


def recovery_key_lines(storage_root: Path) -> list[str]:
    """The recovery key, once: the run that made it shows it (like the embedded homeserver's password)."""
    unshown = take_unshown_recovery_key(storage_root)
    if unshown is None:
        return []
    text, path = unshown
    return [
        f"Recovery key of the bots' encryption: {text} (shown once; kept in {path})",
        "Keep a copy away from this machine: a bot that loses its crypto store, or a standby on another machine,"
        f" needs it ({RECOVERY_KEY_FILE_ENV}); it also opens each bot account's secret storage in Element.",
    ]


def _non_default(storage_root: Path) -> bool:
    return storage_root != (Path.cwd() / DEFAULT_STORAGE_DIRNAME).resolve()


async def start_metrics(
    stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, host: str, port: int
) -> MetricsServer:
    """Serve `/metrics` for the running daemon until the stack closes."""

    def reloads() -> tuple[ReloadOutcome, ...]:
        return tuple(orchestrator.reloader.history) if orchestrator.reloader is not None else ()

    collector = MetricsCollector(lambda: orchestrator.running, reloads)
    token = orchestrator.environment.values.get("MINDROOM_METRICS_TOKEN") or None
    server = MetricsServer(collector, host=host, port=port, token=token)
    await stack.enter_async_context(server)
    return server


async def start_snapshots(stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, store: SnapshotStore) -> None:
    """Write the hook counters to the state (`<data>/state/hooks.json` on SQLite) for `mindroom hooks list`."""

    def registry() -> HookRegistry | None:
        running = orchestrator.running
        return running.live.registry if running is not None else None

    task = asyncio.create_task(
        write_snapshots_until_cancelled(store, registry),
        name="hooks-snapshot",
    )

    async def stop() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    stack.push_async_callback(stop)


def _status(console: Console, text: str) -> contextlib.AbstractContextManager[object]:
    """A spinner on a terminal; elsewhere the text once, as a line."""
    if console.is_terminal:
        return console.status(text)
    console.print(text)
    return contextlib.nullcontext()


async def _start_orchestrator(
    stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, console: Console, stop: asyncio.Event
) -> bool:
    """Start the orchestrator with progress shown; False when a stop signal came first."""
    progress = asyncio.create_task(show_progress(orchestrator, console), name="startup-progress")
    starting = asyncio.create_task(stack.enter_async_context(orchestrator), name="startup")
    stopping = asyncio.create_task(stop.wait(), name="startup-stop")
    try:
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        progress.cancel()
        stopping.cancel()
        if not starting.done():
            starting.cancel()
        await asyncio.gather(progress, stopping, return_exceptions=True)
    if starting.cancelled():
        return False
    starting.result()  # raises what made the start fail
    return True


async def take_state(state: StateBackend, console: Console, stop: asyncio.Event, *, standby: bool) -> Takeover | None:
    """The state's lock: at once (refused with `StateLockedError`), or as a standby once it is free (None: stopped)."""
    if not standby:
        try:
            await state.acquire()
        except StateLockedError as exc:
            holder = exc.holder
            logger.error(
                "the state is held by another daemon; not running the bots",
                location=exc.location,
                holder_host=holder.host if holder else None,
                holder_pid=holder.pid if holder else None,
                holder_since=holder.since if holder else None,
            )
            raise
        return Takeover()
    holder = await state.read_holder()
    if holder is not None:
        console.print(Text(f"Standby: the state at {state.location} is held by {holder.describe()}; waiting."))
    return await wait_for_lock(state, stop)


async def _until_stopped_or_lost(stop: asyncio.Event, state: StateBackend) -> None:
    lost = asyncio.create_task(state.wait_lost(), name="state-lock-watch")
    stopping = asyncio.create_task(stop.wait(), name="stop-signal")
    try:
        await asyncio.wait({lost, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (lost, stopping):
            task.cancel()
        await asyncio.gather(lost, stopping, return_exceptions=True)
    if lost.done() and not lost.cancelled() and lost.exception() is None:
        raise StateLostError(f"the state lock was lost: {lost.result()}; stopping so only one daemon runs the bots")


async def run_daemon(
    environment: DaemonEnvironment,
    console: Console,
    metrics: tuple[str, int | None],
    homeserver_port: int | None,
    *,
    standby: bool = False,
    new_devices: tuple[str, ...] = (),
) -> None:
    """Run until SIGTERM or SIGINT: the state under its lock (a standby waits for it), the embedded homeserver
    when none is configured, the daemon, its extras. `new_devices`: bots that may replace a lost crypto store."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    config = load_config(environment.config_path, environment.values)
    offline_warning(config, environment.values)
    storage = environment.storage_root
    async with contextlib.AsyncExitStack() as stack:
        state = daemon_state(environment, config)
        stack.push_async_callback(state.close)
        await state.open()
        # A standby does now what needs no lock: config, plugins, tools, the hook registry, and the imports
        # the turns it takes over need.
        prepared = await prepare_live_state(environment) if standby else None
        if standby:
            ai.preload_in_background(postgres=state.kind == "postgresql")
        takeover = await take_state(state, console, stop, standby=standby)
        if takeover is None:
            return
        session = None
        if environment.homeserver is None:
            with _status(console, "Starting the embedded homeserver…"):
                session = await stack.enter_async_context(embedded_homeserver(environment, port=homeserver_port))
            environment = session.environment
        orchestrator = Orchestrator(
            environment, state=state, prepared=prepared, run_since=takeover.run_since, new_devices=new_devices
        )
        if not await _start_orchestrator(stack, orchestrator, console, stop):
            return
        assert orchestrator.running is not None
        await start_snapshots(stack, orchestrator, (await state.open_stores()).snapshots)
        host, port = metrics
        if port is not None:
            server = await start_metrics(stack, orchestrator, host, port)
            console.print(f"Metrics: {server.url}")
        for line in [*ready_lines(orchestrator.running, session, storage), *recovery_key_lines(storage)]:
            console.print(Text(line))
        console.print("Press Ctrl+C to stop.")
        await _until_stopped_or_lost(stop, state)
        console.print("Stopping…")
