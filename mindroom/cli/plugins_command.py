"""`mindroom plugins`: list the configured plugins, check a plugin folder, install, update and remove plugins."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from mindroom.cli.common import ConfigOption, StorageOption, fail, new_console, read_cli_environment
from mindroom.errors import ConfigError, PluginError
from mindroom.logging_config import configure_logging, redact_text

if TYPE_CHECKING:
    from mindroom.config.environment import DaemonEnvironment
    from mindroom.hooks.registry import HookRegistry
    from mindroom.plugins.discovery import LoadedPlugins
    from mindroom.plugins.install import ImportCheck, Installed, InstallPaths

__all__ = [
    "PluginsDirOption",
    "load_registry",
    "plugins_app",
    "plugins_check",
    "plugins_install",
    "plugins_list",
    "plugins_remove",
    "plugins_update",
]

plugins_app = typer.Typer(no_args_is_help=True, help="Inspect, install, update and remove plugins.")

PluginsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--plugins-dir", show_default=False, help="Where plugins are installed (default: plugins/ beside the config)."
    ),
]


def load_registry(environment: DaemonEnvironment) -> tuple[LoadedPlugins, HookRegistry]:
    """The config's plugins loaded, and their hook registry (no daemon needed)."""
    from mindroom.config.loading import load_config
    from mindroom.plugins.discovery import build_registry, load_plugins

    paths = environment.runtime_paths
    loaded_config = load_config(paths.config_path, paths.env_values)
    loaded = load_plugins(loaded_config, paths)
    return loaded, build_registry(loaded_config, loaded.plugins, start_workers=False)


@plugins_app.command("list")
def plugins_list(config: ConfigOption = None, storage_path: StorageOption = None) -> None:
    """List plugins: name, folder, the commit installed (plugins.lock), hooks, and any load error."""
    configure_logging("CRITICAL")
    environment = read_cli_environment(config, storage_path)
    try:
        loaded, registry = load_registry(environment)
    except ConfigError as exc:
        fail(str(exc))
        return
    pinned = _locked_commits(environment.runtime_paths.config_dir)
    table = Table("plugin", "folder", "commit", "hooks", "status", box=None, pad_edge=False)
    for plugin in loaded.plugins:
        hooks = sum(1 for hook in registry.all_hooks() if hook.plugin_name == plugin.name)
        commit = pinned.get(plugin.name, "-")
        table.add_row(Text(plugin.name), Text(str(plugin.path)), commit, str(hooks), Text("loaded", style="green"))
    for error in loaded.errors:
        # Text, not markup: a folder name or an exception text must print as it is, and redacted.
        cause = Text(f"ERROR: {redact_text(error.cause)}", style="red")
        commit = pinned.get(error.plugin, "-")
        table.add_row(Text(redact_text(error.plugin)), Text(redact_text(str(error.path))), commit, "-", cause)
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


def _locked_commits(config_dir: Path) -> dict[str, str]:
    """The commit (or folder digest) `plugins.lock` names for each installed plugin, shortened."""
    from mindroom.plugins.lock import LOCK_FILENAME, read_lock

    try:
        lock = read_lock(config_dir / LOCK_FILENAME)
    except PluginError:
        return {}
    return {name: (entry.commit or entry.digest or "-")[:12] for name, entry in lock.plugins.items()}


def _install_paths(config: Path | None, storage_path: Path | None, plugins_dir: Path | None) -> InstallPaths:
    from mindroom.plugins.discovery import DROP_IN_DIRNAME
    from mindroom.plugins.install import InstallPaths

    paths = read_cli_environment(config, storage_path, config_required=False).runtime_paths
    folder = plugins_dir.expanduser().resolve() if plugins_dir is not None else paths.config_dir / DROP_IN_DIRNAME
    return InstallPaths(config_dir=paths.config_dir, plugins_dir=folder, storage_root=paths.storage_root)


def _import_check() -> ImportCheck | None:
    """The sandboxed import of `mindroom plugins check`, or None (and a warning) where bubblewrap is missing."""
    from mindroom.cli.plugin_check import check_plugin_sandboxed, find_bwrap

    bwrap = find_bwrap()
    if bwrap is None:
        typer.echo(
            "warning: the plugin's modules are not imported before it is put in place: bubblewrap (bwrap) is not "
            "installed to sandbox them; the daemon keeps a plugin's last good version when a new one fails",
            err=True,
        )
        return None

    def check(folder: Path, deps_dir: Path | None) -> list[str]:
        findings = check_plugin_sandboxed(folder, bwrap, deps_dir=deps_dir)
        return [finding.message for finding in findings if finding.level == "error"]

    return check


def _print_installed(result: Installed, paths: InstallPaths) -> None:
    entry = result.plugin
    was = f"{result.previous_commit[:12]} -> " if result.previous_commit else ""
    pinned = f"@{was}{entry.commit[:12]}" if entry.commit else f" (folder, digest {entry.digest and entry.digest[:12]})"
    typer.echo(redact_text(f"Installed plugin: {entry.name} ({entry.source}{pinned})"))
    typer.echo(f"  Location: {paths.config_dir / entry.path}")
    for dep in entry.dependencies:
        typer.echo(f"  Package: {dep.name} {dep.version}")
    if not (paths.config_dir / entry.path).resolve().is_relative_to(paths.config_dir.resolve() / "plugins"):
        typer.echo(f"Add it to config.yaml:\nplugins:\n  - path: {entry.path}")


@plugins_app.command("install")
def plugins_install(
    source: Annotated[
        str | None,
        typer.Argument(
            show_default=False,
            help="A local folder or Git repository, a Git URL, OWNER/REPO or NAME (GitHub); each takes @REF.",
        ),
    ] = None,
    locked: Annotated[
        bool, typer.Option("--locked", help="Install exactly what plugins.lock names (no SOURCE).")
    ] = False,
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    plugins_dir: PluginsDirOption = None,
) -> None:
    """Install a plugin into plugins/<name>/ at a pinned commit, with its Python packages, and lock it."""
    from mindroom.plugins.install import install_from_lock, install_plugin

    configure_logging("CRITICAL")
    if locked == (source is not None):
        fail("pass exactly one of SOURCE or --locked")
    paths = _install_paths(config, storage_path, plugins_dir)
    try:
        if source is not None:
            _print_installed(install_plugin(source, paths, import_check=_import_check()), paths)
            return
        for entry in install_from_lock(paths):
            pinned = entry.commit[:12] if entry.commit else f"digest {entry.digest and entry.digest[:12]}"
            typer.echo(
                redact_text(
                    f"Installed plugin: {entry.name} ({entry.source}@{pinned}), {len(entry.dependencies)} packages"
                )
            )
    except PluginError as exc:
        fail(f"Plugin install failed: {exc}", code=1)


@plugins_app.command("update")
def plugins_update(
    name: Annotated[
        str | None, typer.Argument(show_default=False, help="The plugin (default: every installed one).")
    ] = None,
    ref: Annotated[str | None, typer.Option("--ref", help="Follow another Git ref from now on.")] = None,
    update_all: Annotated[bool, typer.Option("--all", help="Update every installed plugin (the default).")] = False,
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    plugins_dir: PluginsDirOption = None,
) -> None:
    """Move installed plugins to the newest commit of their ref and re-lock their packages."""
    from mindroom.plugins.install import update_plugin
    from mindroom.plugins.lock import read_lock

    configure_logging("CRITICAL")
    if update_all and name is not None:
        fail("pass NAME or --all, not both")
    if ref is not None and name is None:
        fail("--ref needs a single plugin NAME")
    paths = _install_paths(config, storage_path, plugins_dir)
    try:
        names = [name] if name is not None else sorted(read_lock(paths.lock_path).plugins)
    except PluginError as exc:
        fail(str(exc), code=1)
        return
    if not names:
        typer.echo(f"No installed plugins in {paths.lock_path}")
        return
    failed = False
    import_check = _import_check()
    for each in names:
        try:
            result = update_plugin(each, paths, ref=ref, import_check=import_check)
        except PluginError as exc:
            failed = True
            typer.echo(redact_text(f"Plugin update failed: {exc}"), err=True)
            continue
        if result.changed:
            _print_installed(result, paths)
        else:
            typer.echo(f"Already up to date: {each} ({(result.plugin.commit or result.plugin.digest or '')[:12]})")
    if failed:
        raise typer.Exit(code=1)


@plugins_app.command("remove")
def plugins_remove(
    name: Annotated[str, typer.Argument(help="The installed plugin.")],
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    plugins_dir: PluginsDirOption = None,
) -> None:
    """Remove an installed plugin: its folder, its packages and its plugins.lock entry."""
    from mindroom.plugins.install import remove_plugin

    configure_logging("CRITICAL")
    paths = _install_paths(config, storage_path, plugins_dir)
    try:
        entry = remove_plugin(name, paths)
    except PluginError as exc:
        fail(f"Plugin remove failed: {exc}", code=1)
        return
    typer.echo(f"Removed plugin: {entry.name} ({paths.config_dir / entry.path})")
