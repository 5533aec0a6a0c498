"""The `mindroom` command line: run the daemon, check the config, list plugins and hooks."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mindroom.constants import DEFAULT_CONFIG_FILENAME
from mindroom.errors import ConfigError
from mindroom.logging_config import configure_logging, get_logger

if TYPE_CHECKING:
    from mindroom.hooks.registry import HookRegistry
    from mindroom.plugins.discovery import LoadedPlugins

__all__ = ["app", "main"]

app = typer.Typer(no_args_is_help=True, add_completion=False, help="MindRoom: AI agents in Matrix, with hooks.")
config_app = typer.Typer(no_args_is_help=True, help="Create and check config files.")
hooks_app = typer.Typer(no_args_is_help=True, help="Inspect the hook registry.")
plugins_app = typer.Typer(no_args_is_help=True, help="Inspect plugins.")
app.add_typer(config_app, name="config")
app.add_typer(hooks_app, name="hooks")
app.add_typer(plugins_app, name="plugins")

logger = get_logger(__name__)

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", envvar="MINDROOM_CONFIG_PATH", help="Path to config.yaml.")
]
StorageOption = Annotated[
    Path | None, typer.Option("--storage-path", envvar="MINDROOM_STORAGE_PATH", help="Data directory.")
]


def _fail(message: str) -> None:
    typer.echo(message, err=True)
    raise typer.Exit(code=2)


async def _run_daemon(config: Path, storage_path: Path | None) -> None:
    from mindroom.orchestrator import Orchestrator

    orchestrator = Orchestrator(config, storage_path=storage_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with orchestrator:
        typer.echo("MindRoom is running. Press Ctrl+C to stop.", err=True)
        await stop.wait()
        typer.echo("Stopping...", err=True)


@app.command()
def run(
    config: ConfigOption = Path(DEFAULT_CONFIG_FILENAME),
    storage_path: StorageOption = None,
    log_level: Annotated[str, typer.Option(envvar="MINDROOM_LOG_LEVEL")] = "INFO",
    json_logs: Annotated[bool | None, typer.Option("--json-logs/--no-json-logs")] = None,
) -> None:
    """Run the daemon until SIGTERM or Ctrl+C."""
    configure_logging(log_level, json=json_logs)
    try:
        asyncio.run(_run_daemon(config, storage_path))
    except ConfigError as exc:
        _fail(str(exc))


@config_app.command("validate")
def config_validate(config: ConfigOption = Path(DEFAULT_CONFIG_FILENAME)) -> None:
    """Check a config file; errors name the file, key path and line."""
    from mindroom.config.loading import load_config
    from mindroom.orchestrator import read_environment

    try:
        loaded = load_config(config, read_environment(config.resolve()))
    except ConfigError as exc:
        _fail(str(exc))
        return
    typer.echo(f"{config}: valid ({len(loaded.agents)} agents, {len(loaded.plugins)} plugin entries)")


def _load_registry(config: Path, storage_path: Path | None) -> tuple[LoadedPlugins, HookRegistry]:
    from mindroom.config.loading import load_config
    from mindroom.constants import DEFAULT_STORAGE_DIRNAME, RuntimePaths
    from mindroom.orchestrator import read_environment
    from mindroom.plugins.discovery import build_registry, load_plugins

    env = read_environment(config.resolve())
    loaded_config = load_config(config, env)
    storage = storage_path or config.resolve().parent / DEFAULT_STORAGE_DIRNAME
    paths = RuntimePaths(config_path=config.resolve(), storage_root=storage.resolve(), env_values=env)
    loaded = load_plugins(loaded_config, paths)
    return loaded, build_registry(loaded_config, loaded.plugins)


@plugins_app.command("list")
def plugins_list(config: ConfigOption = Path(DEFAULT_CONFIG_FILENAME), storage_path: StorageOption = None) -> None:
    """List plugins: name, folder, hooks, and any load error."""
    configure_logging("ERROR")
    try:
        loaded, registry = _load_registry(config, storage_path)
    except ConfigError as exc:
        _fail(str(exc))
        return
    for plugin in loaded.plugins:
        hooks = [h for h in registry.all_hooks() if h.plugin_name == plugin.name]
        typer.echo(f"{plugin.name}  {plugin.path}  hooks={len(hooks)}")
    for error in loaded.errors:
        typer.echo(f"{error.plugin}  {error.path}  ERROR: {error.cause}")
    if loaded.errors:
        raise typer.Exit(code=1)


@hooks_app.command("list")
def hooks_list(config: ConfigOption = Path(DEFAULT_CONFIG_FILENAME), storage_path: StorageOption = None) -> None:
    """Hooks per event in execution order with their settings (counters are live in `!hooks`)."""
    configure_logging("ERROR")
    from mindroom.commands import format_hooks_table
    from mindroom.hooks.telemetry import hook_telemetry

    try:
        _, registry = _load_registry(config, storage_path)
    except ConfigError as exc:
        _fail(str(exc))
        return
    typer.echo(format_hooks_table(hook_telemetry(registry)))


def main() -> None:
    """Entry point of the `mindroom` script."""
    app(prog_name="mindroom")


if __name__ == "__main__":
    main()
