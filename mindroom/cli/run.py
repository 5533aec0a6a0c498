"""`mindroom run`: signals, the state lock (or a standby's wait for it), the embedded homeserver, startup
progress, the ready banner, the HTTP app (API, dashboard, metrics), snapshots.

Kept apart from the command itself so the command stays a thin shell and these steps can be tested directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from mindroom import ai
from mindroom.api.keys import DashboardKey, with_api_key
from mindroom.api.settings import DEFAULT_API_HOST, DEFAULT_API_PORT, ApiSettings, api_settings
from mindroom.config.environment import DaemonEnvironment, HomeserverSettings, embedded_appservice
from mindroom.config.loading import load_config
from mindroom.constants import DEFAULT_STORAGE_DIRNAME
from mindroom.daemon.hooks_snapshot import write_snapshots_until_cancelled
from mindroom.daemon.orchestrator import Orchestrator, prepare_live_state
from mindroom.daemon.standby import Takeover, daemon_state, wait_for_lock
from mindroom.daemon.start_check import state_problem
from mindroom.daemon.wiring import DaemonApiView, RunningDaemon
from mindroom.errors import ConfigError
from mindroom.homeserver.embedded import EmbeddedHomeserver, HumanAccount
from mindroom.hooks.registry import HookRegistry
from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.recovery_key import RECOVERY_KEY_FILE_ENV, take_unshown_recovery_key
from mindroom.state.backend import StateBackend
from mindroom.state.errors import StateLockedError, StateLostError
from mindroom.state.snapshots import SnapshotStore

if TYPE_CHECKING:
    from mindroom.api.server import ApiServer

__all__ = [
    "DEFAULT_HUMAN_USER",
    "ApiBanner",
    "ApiOptions",
    "EmbeddedSession",
    "api_lines",
    "api_options",
    "embedded_homeserver",
    "ready_lines",
    "recovery_key_lines",
    "run_daemon",
    "show_progress",
    "start_api",
    "start_snapshots",
    "take_state",
]

logger = get_logger(__name__)

DEFAULT_HUMAN_USER = "@user:localhost"
_PROGRESS_POLL_S = 0.1


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
    appservice = embedded_appservice(environment.values)
    server = EmbeddedHomeserver(
        environment.storage_root, port=port, account_prefix=environment.account_prefix, appservice=appservice
    )
    async with server:
        user_id = environment.values.get("MINDROOM_USER") or DEFAULT_HUMAN_USER
        human = await server.ensure_user(user_id)
        settings = HomeserverSettings(
            server.url,
            server.server_name,
            server.registration_shared_secret,
            environment.account_prefix,
            server.appservice_registration if appservice else None,
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
    return f"Catching up with the homeserver ({synced}/{bots})"


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


@dataclass(frozen=True, slots=True)
class ApiOptions:
    """`--api-host`, `--api-port`, `--no-api`."""

    host: str = DEFAULT_API_HOST
    port: int = DEFAULT_API_PORT
    enabled: bool = True


def api_options(
    host: str | None,
    port: int | None,
    enabled: bool,
    *,
    metrics_host: str | None = None,
    metrics_port: int | None = None,
) -> ApiOptions:
    """The HTTP app's options; `--metrics-port` and `--metrics-host` are its old names (`/metrics` moved onto it)."""
    if metrics_port is not None or metrics_host is not None:
        logger.warning(
            "--metrics-port and --metrics-host are old names of --api-port and --api-host",
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            fix="use --api-port/--api-host; /metrics is served beside the API and the dashboard",
        )
    if port is None:
        port = metrics_port if metrics_port is not None else DEFAULT_API_PORT
    if host is None:
        host = metrics_host or DEFAULT_API_HOST
    return ApiOptions(host, port, enabled)


@dataclass(frozen=True, slots=True)
class ApiBanner:
    """What the banner says of the HTTP app: its address, and the key generated for it (None: the operator's)."""

    url: str
    key: DashboardKey | None = None


def api_lines(api: ApiBanner) -> list[str]:
    """The dashboard's address (with its key the one time it is made), the API's, and where the key is kept."""
    key = api.key
    if key is not None and key.created:
        lines = [
            f"Dashboard: {api.url}/#key={key.value}",
            f"Dashboard key: {key.value} (shown once; kept in {key.path})",
        ]
    else:
        lines = [f"Dashboard: {api.url}/"]
        if key is not None:
            lines.append(f"Dashboard key: kept in {key.path}")
    return [*lines, f"OpenAI-compatible API: {api.url}/v1 · REST API: {api.url}/api · metrics: {api.url}/metrics"]


def ready_lines(
    running: RunningDaemon, session: EmbeddedSession | None, storage_root: Path, api: ApiBanner | None = None
) -> list[str]:
    """The ready line (rooms and agents), then how to connect when the homeserver is the embedded one, and
    where the dashboard is."""
    rooms = ", ".join(f"{key} ({room_id})" for key, room_id in running.directory.room_ids.items()) or "none"
    agents = ", ".join(running.live.config.agents) or "none"
    teams = f" Teams: {', '.join(running.live.config.teams)}." if running.live.config.teams else ""
    lines = [f"MindRoom is ready. Rooms: {rooms}. Agents: {agents}.{teams}"]
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
    return lines if api is None else [*lines, *api_lines(api)]


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


async def start_api(stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, settings: ApiSettings) -> ApiServer:
    """Serve the HTTP app on the orchestrator until the stack closes (it answers 503 until the daemon runs)."""
    # Imported here: FastAPI, Starlette and uvicorn cost a daemon run with `--no-api` nothing.
    from mindroom.api.app import create_app
    from mindroom.api.app_context import ApiContext
    from mindroom.api.server import ApiServer

    ctx = ApiContext(DaemonApiView(orchestrator), settings)
    server = ApiServer(ctx, create_app(ctx))
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
    api: ApiOptions,
    homeserver_port: int | None,
    *,
    standby: bool = False,
    new_devices: tuple[str, ...] = (),
) -> None:
    """Run until SIGTERM or SIGINT: the state under its lock (a standby waits for it), the embedded homeserver
    when none is configured, the daemon, its extras (the HTTP app unless `--no-api`). `new_devices`: bots that
    may replace a lost crypto store."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    config = load_config(environment.config_path, environment.values)
    unusable = state_problem(environment.runtime_paths, config)
    if unusable is not None:  # in the words of `mindroom config validate`
        raise ConfigError(environment.config_path, [str(unusable)])
    storage = environment.storage_root
    api_key: DashboardKey | None = None
    keyed: ApiSettings | None = None
    if api.enabled:
        # The key is settled (and an unsafe bind refused) now, not after every login.
        keyed, api_key = with_api_key(api_settings(environment.values, host=api.host, port=api.port), storage)
        keyed.check_bind()
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
        banner = None
        if keyed is not None:
            # Read again: the embedded homeserver's environment names the owner (`MINDROOM_USER`).
            settings = api_settings(environment.values, host=api.host, port=api.port, api_key=keyed.api_key)
            server = await start_api(stack, orchestrator, settings)
            banner = ApiBanner(server.url, api_key)
        if not await _start_orchestrator(stack, orchestrator, console, stop):
            return
        assert orchestrator.running is not None
        if banner is not None:
            from mindroom.api.server import finish_turns

            # API turns end before the bots stop, with the bots' grace to finish.
            stack.push_async_callback(finish_turns, server.ctx, environment.shutdown_grace_s)
        await start_snapshots(stack, orchestrator, (await state.open_stores()).snapshots)
        for line in [*ready_lines(orchestrator.running, session, storage, banner), *recovery_key_lines(storage)]:
            console.print(Text(line))
        console.print("Press Ctrl+C to stop.")
        await _until_stopped_or_lost(stop, state)
        console.print("Stopping…")
