"""What `mindroom run` does around the orchestrator: environment, embedded homeserver, progress, banner.

Kept apart from `cli.py` so the command stays a thin shell and these steps can be tested directly.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from mindroom.cli.config_init import PROVIDER_ENV_VARS, detect_provider, provider_env_defaults
from mindroom.config.main import Config
from mindroom.constants import DEFAULT_STORAGE_DIRNAME
from mindroom.daemon.hooks_snapshot import snapshot_path, write_snapshots_until_cancelled
from mindroom.daemon.metrics import MetricsCollector, MetricsServer
from mindroom.daemon.orchestrator import HomeserverSettings, read_environment
from mindroom.homeserver.embedded import EmbeddedHomeserver, HumanAccount
from mindroom.logging_config import get_logger
from mindroom.matrix.credentials import DEFAULT_ACCOUNT_PREFIX

if TYPE_CHECKING:
    from mindroom.bots.runtime import DaemonRuntime
    from mindroom.daemon.orchestrator import Orchestrator
    from mindroom.hooks.registry import HookRegistry

__all__ = [
    "DEFAULT_HUMAN_USER",
    "SECRET_FILE_VARIABLES",
    "EmbeddedSession",
    "daemon_environment",
    "embedded_homeserver",
    "offline_warning",
    "ready_lines",
    "resolve_storage_root",
    "show_progress",
    "start_metrics",
    "start_snapshots",
]

logger = get_logger(__name__)

DEFAULT_HUMAN_USER = "@user:localhost"
SECRET_FILE_VARIABLES = (
    "MATRIX_REGISTRATION_SHARED_SECRET",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OLLAMA_API_KEY",
    "MINDROOM_USER_PASSWORD",
)
"""Each may instead be given as `<NAME>_FILE`, the path of a file holding the value."""
_PROGRESS_POLL_S = 0.1


def daemon_environment(config_path: Path) -> dict[str, str]:
    """The environment the daemon reads its config with: process env and `.env`, `*_FILE` secrets, provider defaults."""
    env = read_environment(config_path.resolve())
    for name in SECRET_FILE_VARIABLES:
        path = env.get(f"{name}_FILE")
        if path and not env.get(name):
            # Docker and systemd hand secrets over as files; the value never has to sit in the environment.
            env[name] = Path(path).read_text(encoding="utf-8").strip()
    for key, value in provider_env_defaults(env).items():
        env.setdefault(key, value)
    return env


def resolve_storage_root(config_path: Path, option: Path | None, env: Mapping[str, str]) -> Path:
    """`--storage-path`, else `MINDROOM_STORAGE_PATH` (also from `.env`), else `mindroom_data` beside the config."""
    raw = option or (Path(env["MINDROOM_STORAGE_PATH"]) if env.get("MINDROOM_STORAGE_PATH") else None)
    return (raw or config_path.resolve().parent / DEFAULT_STORAGE_DIRNAME).expanduser().resolve()


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
    """The running embedded homeserver, the settings the orchestrator gets, and the human account."""

    server: EmbeddedHomeserver
    settings: HomeserverSettings
    human: HumanAccount = field(repr=False)


@contextlib.asynccontextmanager
async def embedded_homeserver(
    storage_root: Path, env: MutableMapping[str, str], *, port: int | None = None
) -> AsyncIterator[EmbeddedSession]:
    """Start (and finally stop) the private homeserver; sets `MINDROOM_USER` so the config authorizes it."""
    server = EmbeddedHomeserver(storage_root, port=port)
    async with server:
        user_id = env.setdefault("MINDROOM_USER", DEFAULT_HUMAN_USER)
        human = await server.ensure_user(user_id)
        settings = HomeserverSettings(
            server.url,
            server.server_name,
            server.registration_shared_secret,
            env.get("MINDROOM_ACCOUNT_PREFIX", DEFAULT_ACCOUNT_PREFIX),
        )
        yield EmbeddedSession(server, settings, human)


def _phase(orchestrator: Orchestrator) -> str:
    runtime = orchestrator.runtime
    if runtime is None:
        return "Loading config and plugins"
    bots = len(runtime.bots)
    if len(runtime.bot_user_ids) < bots:
        return f"Signing in {bots} accounts ({len(runtime.bot_user_ids)}/{bots})"
    rooms = runtime.config.all_room_keys()
    if len(runtime.room_ids) < len(rooms):
        return f"Joining {len(rooms)} rooms ({len(runtime.room_ids)}/{len(rooms)})"
    synced = sum(1 for bot in runtime.bots.values() if bot.client.has_synced)
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


def ready_lines(runtime: DaemonRuntime, session: EmbeddedSession | None, storage_root: Path) -> list[str]:
    """The ready line (rooms and agents), then how to connect when the homeserver is the embedded one."""
    rooms = ", ".join(f"{key} ({room_id})" for key, room_id in runtime.room_ids.items()) or "none"
    agents = ", ".join(runtime.config.agents) or "none"
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


def _non_default(storage_root: Path) -> bool:
    return storage_root != (Path.cwd() / DEFAULT_STORAGE_DIRNAME).resolve()


async def start_metrics(
    stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, host: str, port: int
) -> MetricsServer:
    """Serve `/metrics` for the live runtime until the stack closes."""
    server = MetricsServer(MetricsCollector(lambda: orchestrator.runtime), host=host, port=port)
    await stack.enter_async_context(server)
    return server


async def start_snapshots(stack: contextlib.AsyncExitStack, orchestrator: Orchestrator, storage_root: Path) -> None:
    """Write `<data>/state/hooks.json` for `mindroom hooks list` until the stack closes."""

    def registry() -> HookRegistry | None:
        runtime = orchestrator.runtime
        return runtime.registry if runtime is not None else None

    task = asyncio.create_task(
        write_snapshots_until_cancelled(snapshot_path(storage_root), registry),
        name="hooks-snapshot",
    )

    async def stop() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    stack.push_async_callback(stop)
