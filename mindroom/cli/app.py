"""The `mindroom` command line: run the daemon, set up and check config, inspect plugins and hooks, chat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from mindroom.cli.common import ConfigOption, StorageOption, fail, locate, new_console, read_cli_environment
from mindroom.cli.knowledge_command import knowledge_app
from mindroom.cli.plugins_command import load_registry, plugins_app
from mindroom.cli.state_command import state_app
from mindroom.cli.threads_command import threads_app
from mindroom.cli.tools_command import tools_app
from mindroom.cli.usage_command import usage
from mindroom.daemon.event_loop import run_on_fast_loop
from mindroom.errors import ConfigError, MindroomError
from mindroom.logging_config import configure_logging, get_logger, redact_text, redact_value

__all__ = [
    "app",
    "chat",
    "config_app",
    "config_init",
    "config_validate",
    "doctor",
    "hooks_app",
    "hooks_list",
    "main",
    "run",
]

app = typer.Typer(no_args_is_help=True, add_completion=False, help="MindRoom: AI agents in Matrix, with hooks.")
config_app = typer.Typer(no_args_is_help=True, help="Create and check config files.")
hooks_app = typer.Typer(no_args_is_help=True, help="Inspect the hook registry.")
app.add_typer(config_app, name="config")
app.add_typer(state_app, name="state")
app.add_typer(knowledge_app, name="knowledge")
app.add_typer(hooks_app, name="hooks")
app.add_typer(plugins_app, name="plugins")
app.add_typer(tools_app, name="tools")
app.add_typer(threads_app, name="threads")
app.command("usage")(usage)

logger = get_logger(__name__)

# -- run ------------------------------------------------------------------------------------------------


@app.command()
def run(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    log_level: Annotated[str, typer.Option(envvar="MINDROOM_LOG_LEVEL", help="DEBUG, INFO, WARNING, ERROR.")] = "INFO",
    json_logs: Annotated[
        bool | None,
        typer.Option("--json-logs/--no-json-logs", envvar="MINDROOM_LOG_JSON", help="Default: JSON unless a terminal."),
    ] = None,
    api_host: Annotated[
        str | None,
        typer.Option(
            envvar="MINDROOM_API_HOST",
            help="Address of the API, dashboard and /metrics (default 127.0.0.1; beyond it, keys are required).",
        ),
    ] = None,
    api_port: Annotated[
        int | None, typer.Option(envvar="MINDROOM_API_PORT", help="Port of the API, dashboard and /metrics (8765).")
    ] = None,
    api: Annotated[
        bool,
        typer.Option(
            "--api/--no-api",
            envvar="MINDROOM_API",
            help="Serve the OpenAI-compatible API, the REST API and the dashboard.",
        ),
    ] = True,
    metrics_port: Annotated[
        int | None,
        typer.Option(envvar="MINDROOM_METRICS_PORT", help="Old name of --api-port (/metrics is on the API's port)."),
    ] = None,
    metrics_host: Annotated[
        str | None, typer.Option(envvar="MINDROOM_METRICS_HOST", help="Old name of --api-host.")
    ] = None,
    homeserver_port: Annotated[
        int | None, typer.Option(envvar="MINDROOM_HOMESERVER_PORT", help="Port of the embedded homeserver.")
    ] = None,
    standby: Annotated[
        bool,
        typer.Option(
            "--standby",
            envvar="MINDROOM_STANDBY",
            help="Prepare, wait until the active daemon is gone, then take over.",
        ),
    ] = False,
    new_device: Annotated[
        list[str] | None,
        typer.Option(
            "--new-device",
            metavar="BOT",
            help="Start BOT as a new Matrix device if its crypto store is lost (repeatable).",
        ),
    ] = None,
) -> None:
    """Run the daemon until SIGTERM or Ctrl+C (with no MATRIX_HOMESERVER: on a private embedded homeserver)."""
    from mindroom.cli.run import api_options, run_daemon  # imports the libraries whose logging is set up next
    from mindroom.homeserver.embedded import EmbeddedHomeserverError
    from mindroom.matrix import MatrixError
    from mindroom.private_files import use_private_umask
    from mindroom.state.errors import StateLockedError

    # Before anything is created: the data directory holds every conversation and credential, and much of
    # it is written by code that picks no mode (agno's and SQLite's files, Synapse, plugins, shell tools).
    # Only the umask makes all of that private from the first byte.
    use_private_umask()
    configure_logging(log_level, json=json_logs)
    try:
        environment = read_cli_environment(config, storage_path)
        console = new_console()  # stdout: what a person reads (the password too); stderr carries the logs
        options = api_options(api_host, api_port, api, metrics_host=metrics_host, metrics_port=metrics_port)
        run_on_fast_loop(
            run_daemon(
                environment, console, options, homeserver_port, standby=standby, new_devices=tuple(new_device or ())
            )
        )
    except ConfigError as exc:
        fail(str(exc))
    except StateLockedError as exc:
        fail(f"mindroom run: {exc}", code=3)
    except (EmbeddedHomeserverError, MatrixError, MindroomError, OSError, TimeoutError) as exc:
        logger.error("daemon failed", error=str(exc) or type(exc).__name__)
        fail(f"mindroom run: {exc}", code=1)


# -- config -----------------------------------------------------------------------------------------------


@config_app.command("init")
def config_init(
    directory: Annotated[Path, typer.Argument(help="Where to write config.yaml and .env.")] = Path(),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter config.yaml and .env (a real provider when its key is set, else the offline model)."""
    from mindroom.cli.config_init import write_starter_files
    from mindroom.config.environment import process_environ
    from mindroom.config.providers import detect_provider

    console = new_console()
    try:
        written = write_starter_files(directory, process_environ(), force=force)
    except FileExistsError as exc:
        fail(str(exc))
        return
    choice = detect_provider(process_environ())
    for path in written:
        console.print(f"wrote {path}")
    if choice.is_offline:
        console.print(
            "Agents use the offline model; set OPENAI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_HOST for a real one."
        )
    else:
        console.print(f"Agents use {choice.provider} ({choice.model_id}) because {choice.env_var} is set.")
    console.print("Next: mindroom run")


@config_app.command("validate")
def config_validate(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            "--path",
            show_default=False,
            help="Path to config.yaml (default: MINDROOM_CONFIG_PATH, else ./config.yaml, else"
            " ~/.mindroom/config.yaml).",
        ),
    ] = None,
) -> None:
    """Check a config as `mindroom run` would (its plugins, tools and skills too): what run refuses is an error
    (exit 2), what it only warns about a warning; each names the key path, the line and the fix."""
    from mindroom.daemon.start_check import check_start

    configure_logging("CRITICAL")  # what the build would log is said below, once, as a warning
    found = read_cli_environment(config, None)
    checked = check_start(found.runtime_paths)
    if checked.errors:
        fail(str(checked.error()))
        return
    for finding in checked.warnings:
        typer.echo(redact_text(f"warning: {finding}"), err=True)
    loaded = checked.build.live.config if checked.build is not None else None
    agents = len(loaded.agents) if loaded is not None else 0
    plugins = len(loaded.plugins) if loaded is not None else 0
    typer.echo(f"{found.config_path}: valid ({agents} agents, {plugins} plugin entries)")


# -- doctor -----------------------------------------------------------------------------------------------


@app.command()
def doctor(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    no_model_call: Annotated[bool, typer.Option("--no-model-call", help="Check keys but do not call models.")] = False,
) -> None:
    """Check the data dir, state and its lock, homeserver, accounts, models, plugins: one line each, pass or the fix."""
    import mindroom.ai  # noqa: F401 - imported before logging is set up, so its library loggers are adopted
    from mindroom.cli.doctor import CheckStatus, run_checks
    from mindroom.cli.doctor_result import check_fail

    configure_logging("CRITICAL")
    paths = locate(config, storage_path)
    environment = paths.environment
    if paths.config_found:
        results = asyncio.run(
            run_checks(
                environment.config_path, environment.storage_root, environment.values, call_models=not no_model_call
            )
        )
    else:  # nothing else is checked: the data dir would be made beside a config that is not there
        results = [check_fail("config", paths.config_missing(), paths.config_fix())]
    console = new_console()
    marks = {
        CheckStatus.PASS: ("ok  ", "green"),
        CheckStatus.WARN: ("warn", "yellow"),
        CheckStatus.FAIL: ("FAIL", "red"),
    }
    for result in results:
        mark, style = marks[result.status]
        line = Text()
        line.append(mark, style=f"bold {style}")
        line.append(f"  {result.name}: {result.detail}")
        if result.fix:
            line.append(f" — fix: {result.fix}", style=style)
        console.print(line)
    if any(result.status is CheckStatus.FAIL for result in results):
        raise typer.Exit(code=1)


# -- hooks ----------------------------------------------------------------------------------------------


@hooks_app.command("list")
def hooks_list(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Hooks per event in pipeline order; calls, failures and p95 come from the running daemon."""
    import dataclasses

    from mindroom.cli.hooks_list import hooks_table
    from mindroom.daemon.hooks_snapshot import read_state_hooks_snapshot
    from mindroom.hooks.telemetry import hook_telemetry, ordered_telemetry

    configure_logging("CRITICAL")
    paths = locate(config, storage_path)
    snapshot = read_state_hooks_snapshot(paths.environment)
    if snapshot is not None and snapshot.is_live:
        rows = list(snapshot.rows)
        source = f"Counters from the running daemon (pid {snapshot.pid}, {snapshot.age_s:.0f} s ago)."
    else:
        if not paths.config_found:
            fail(f"no daemon runs with the data dir {paths.data_dir()}; {paths.data_dir_fix()}")
        try:
            _, registry = load_registry(paths.environment)
        except ConfigError as exc:
            fail(str(exc))
            return
        rows = ordered_telemetry(hook_telemetry(registry))
        source = "No daemon is running for this data dir: hooks from the config, counters at zero."
    if as_json:
        typer.echo(json.dumps(redact_value([dataclasses.asdict(row) for row in rows]), indent=2))
        return
    console = new_console()
    console.print(hooks_table(rows) if rows else "No hooks are registered.")
    console.print(Text(source, style="dim"))


# -- chat -------------------------------------------------------------------------------------------------


@app.command()
def chat(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    room: Annotated[
        str | None, typer.Option(help="Room key, #alias or !id (default: the config's first room).")
    ] = None,
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="Send one message, print the answers, exit.")
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="Matrix user id (default: MINDROOM_USER or the embedded user).")
    ] = None,
    password: Annotated[str | None, typer.Option(help="Password (default: MINDROOM_USER_PASSWORD).")] = None,
    homeserver: Annotated[
        str | None, typer.Option(help="Homeserver URL (default: MATRIX_HOMESERVER or embedded).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for answers.")] = 120.0,
) -> None:
    """Chat with the agents in a room from this terminal, as the configured human user."""
    from mindroom.cli.chat import ChatError, TerminalChat, resolve_login
    from mindroom.config.loading import load_config
    from mindroom.matrix import MatrixError

    configure_logging("CRITICAL")
    paths = locate(config, storage_path)
    environment = paths.environment
    env, storage = environment.values, environment.storage_root
    try:
        login = resolve_login(env, storage, homeserver=homeserver, user=user, password=password, searched=paths)
    except ChatError as exc:
        fail(str(exc))
        return
    if room is None:
        try:
            keys = load_config(environment.config_path, env).all_room_keys()
        except ConfigError:
            keys = []
        room = keys[0] if keys else "lobby"
    server_name = login.user_id.split(":", 1)[-1]
    target = room if room.startswith(("!", "#")) else f"#{room}:{server_name}"
    prefix = environment.account_prefix
    console = new_console()

    async def session() -> bool:
        async with TerminalChat(login, target, console, accept_invites_from=prefix) as terminal:
            if message is not None:
                await terminal.ask(message, timeout_s=timeout)
                return bool(terminal.answers)
            console.print(Text(f"{login.user_id} in {room} on {login.url}", style="dim"))
            await terminal.interactive()
            return True

    try:
        answered = asyncio.run(session())
    except MatrixError as exc:
        fail(f"mindroom chat: {exc} (is `mindroom run` running?)", code=1)
        return
    except KeyboardInterrupt:
        return
    if not answered:
        raise typer.Exit(code=1)


def main() -> None:
    """Entry point of the `mindroom` script."""
    app(prog_name="mindroom")


if __name__ == "__main__":
    main()
