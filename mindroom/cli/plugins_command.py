"""`mindroom plugins`: list the configured plugins, check a plugin folder."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from mindroom.cli.common import ConfigOption, StorageOption, fail, new_console, read_cli_environment
from mindroom.errors import ConfigError
from mindroom.logging_config import configure_logging, redact_text

if TYPE_CHECKING:
    from mindroom.config.environment import DaemonEnvironment
    from mindroom.hooks.registry import HookRegistry
    from mindroom.plugins.discovery import LoadedPlugins

__all__ = ["load_registry", "plugins_app", "plugins_check", "plugins_list"]

plugins_app = typer.Typer(no_args_is_help=True, help="Inspect plugins.")


def load_registry(environment: DaemonEnvironment) -> tuple[LoadedPlugins, HookRegistry]:
    """The config's plugins loaded, and their hook registry (no daemon needed)."""
    from mindroom.config.loading import load_config
    from mindroom.plugins.discovery import build_registry, load_plugins

    paths = environment.runtime_paths
    loaded_config = load_config(paths.config_path, paths.env_values)
    loaded = load_plugins(loaded_config, paths)
    return loaded, build_registry(loaded_config, loaded.plugins)


@plugins_app.command("list")
def plugins_list(config: ConfigOption = None, storage_path: StorageOption = None) -> None:
    """List plugins: name, folder, hooks, and any load error."""
    configure_logging("CRITICAL")
    environment = read_cli_environment(config, storage_path)
    try:
        loaded, registry = load_registry(environment)
    except ConfigError as exc:
        fail(str(exc))
        return
    table = Table("plugin", "folder", "hooks", "status", box=None, pad_edge=False)
    for plugin in loaded.plugins:
        hooks = sum(1 for hook in registry.all_hooks() if hook.plugin_name == plugin.name)
        table.add_row(Text(plugin.name), Text(str(plugin.path)), str(hooks), Text("loaded", style="green"))
    for error in loaded.errors:
        # Text, not markup: a folder name or an exception text must print as it is, and redacted.
        cause = Text(f"ERROR: {redact_text(error.cause)}", style="red")
        table.add_row(Text(redact_text(error.plugin)), Text(redact_text(str(error.path))), "-", cause)
    new_console().print(table if loaded.plugins or loaded.errors else "No plugins are configured.")
    if loaded.errors:
        raise typer.Exit(code=1)


@plugins_app.command("check")
def plugins_check(
    path: Annotated[Path, typer.Argument(help="The plugin folder (holding mindroom.plugin.json).")],
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--import",
            help="Import the plugin's modules in this process, with your rights, without a sandbox.",
        ),
    ] = False,
) -> None:
    """Check a plugin folder without a homeserver: manifest, API version, imports, hooks, tools, skills.

    Importing runs the plugin's code. By default it runs in a bubblewrap sandbox: no network, an empty
    HOME, the plugin folder read-only, no data directory. Where bubblewrap is missing the modules are not
    imported (an error says so) unless --import asks to import them here, with your rights. The first
    line of the report says which ran.
    """
    from mindroom.cli.plugin_check import (
        UNSANDBOXED,
        Finding,
        check_manifest,
        check_plugin,
        check_plugin_sandboxed,
        find_bwrap,
        format_finding,
        has_errors,
    )

    configure_logging("CRITICAL")
    bwrap = None if unsandboxed else find_bwrap()
    if unsandboxed:
        # What the plugin prints while it is imported goes to stderr: stdout is the report.
        with contextlib.redirect_stdout(sys.stderr):
            findings = [Finding("warning", UNSANDBOXED), *check_plugin(path)]
    elif bwrap is not None:
        findings = check_plugin_sandboxed(path, bwrap)
    else:
        refused = Finding(
            "error",
            "the plugin's modules are not imported: bubblewrap (bwrap) is not installed to sandbox its code; "
            "install the bubblewrap package (apt-get install bubblewrap), or pass --import to import them in "
            "this process, with your rights",
        )
        # What could be checked first, then why the rest was not: the report ends on the error it exits with.
        findings = [*check_manifest(path), refused] if Path(path).is_dir() else [refused]
    for finding in findings:
        typer.echo(redact_text(format_finding(finding)))
    if has_errors(findings):
        raise typer.Exit(code=1)
