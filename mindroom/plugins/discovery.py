"""Which plugins a config runs: its `plugins:` entries plus folders dropped into `plugins/` beside it."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mindroom.config.main import Config
from mindroom.config.plugin import PluginEntryConfig
from mindroom.constants import PLUGIN_MANIFEST_FILENAME, ROUTER_AGENT_NAME, RuntimePaths, resolve_config_relative_path
from mindroom.errors import PluginError
from mindroom.hooks.registry import HookRegistry
from mindroom.logging_config import get_logger
from mindroom.plugins.loader import Plugin, load_plugin_dir
from mindroom.plugins.lock import LOCK_FILENAME, PluginInstallError, deps_folder, read_lock
from mindroom.plugins.settings import PluginSettingsError, checked_settings

__all__ = [
    "DROP_IN_DIRNAME",
    "WATCHED_SUFFIXES",
    "LoadedPlugins",
    "build_registry",
    "load_plugins",
    "plugin_digest",
    "plugin_folders",
    "plugin_watch_paths",
]

logger = get_logger(__name__)

DROP_IN_DIRNAME = "plugins"
WATCHED_SUFFIXES = frozenset({".py", ".json", ".yaml", ".yml", ".toml", ".md"})
"""The files of a plugin folder that count as its source: editing one reloads it."""


@dataclass(frozen=True, slots=True)
class LoadedPlugins:
    """The plugins that loaded, and an error for each one that did not.

    `kept` names the plugins among `plugins` that failed this time and run as their last good generation;
    `left_out` the ones that failed with no generation to keep (by plugin name, or folder name when unreadable).
    """

    plugins: tuple[Plugin, ...]
    errors: tuple[PluginError, ...]
    kept: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


def _resolve_entry(entry: PluginEntryConfig, runtime_paths: RuntimePaths) -> Path:
    path = resolve_config_relative_path(entry.path, runtime_paths)
    if not path.exists():
        candidate = (runtime_paths.config_dir / DROP_IN_DIRNAME / entry.path).resolve()
        if candidate.is_dir():
            return candidate
    return path


def plugin_folders(config: Config, runtime_paths: RuntimePaths) -> list[tuple[Path, PluginEntryConfig]]:
    """Folders to load, in order (config entries first, then drop-ins by name), with their entries."""
    folders: list[tuple[Path, PluginEntryConfig]] = []
    seen: set[Path] = set()
    disabled: set[Path] = set()
    for entry in config.plugin_entries:
        path = _resolve_entry(entry, runtime_paths)
        if not entry.enabled:
            disabled.add(path)
            continue
        if path in seen:
            continue
        seen.add(path)
        folders.append((path, entry))
    drop_in = runtime_paths.config_dir / DROP_IN_DIRNAME
    if drop_in.is_dir():
        for child in sorted(drop_in.iterdir()):
            resolved = child.resolve()
            if resolved in seen or resolved in disabled or child.name.startswith((".", "_")):
                continue
            if (child / PLUGIN_MANIFEST_FILENAME).is_file():
                seen.add(resolved)
                folders.append((resolved, PluginEntryConfig(path=str(resolved))))
    return folders


def load_plugins(config: Config, runtime_paths: RuntimePaths, *, last_good: Sequence[Plugin] = ()) -> LoadedPlugins:
    """Load every plugin of the config; a plugin that fails is reported and does not stop the others.

    With `last_good` (the plugins running now), a folder that fails to load keeps the generation loaded
    from it before, with its new config entry; a folder that never loaded is left out. Settings that do not fit
    the shape their plugin declares raise `PluginSettingsError` (a `ConfigError`) naming every key path.
    """
    previous = {plugin.path: plugin for plugin in last_good}
    plugins: list[Plugin] = []
    errors: list[PluginError] = []
    kept: list[str] = []
    left_out: list[str] = []
    names: dict[str, Path] = {}
    wheres = _settings_paths(config, runtime_paths)
    misfits: list[str] = []
    deps = _installed_deps(runtime_paths)
    for order, (path, entry) in enumerate(plugin_folders(config, runtime_paths)):
        try:
            plugin = _load_one(path, order, entry, names, deps.get(path))
            settings, problems = checked_settings(plugin, entry.settings, wheres.get(path, _drop_in_where(path)))
        except PluginError as exc:
            errors.append(_logged(exc))
            fallback = previous.get(path)
            if fallback is None or fallback.name in names:
                left_out.append(exc.plugin)
                continue
            plugin = dataclasses.replace(fallback, entry_config=entry, plugin_order=order)
            kept.append(plugin.name)
            logger.warning("plugin keeps its last good generation", plugin=plugin.name, path=str(path))
            settings, problems = checked_settings(plugin, entry.settings, wheres.get(path, _drop_in_where(path)))
        misfits.extend(problems)
        if settings != entry.settings:  # the hooks get the validated values
            plugin = dataclasses.replace(plugin, entry_config=entry.model_copy(update={"settings": settings}))
        names[plugin.name] = path
        plugins.append(plugin)
    if misfits:
        raise PluginSettingsError(runtime_paths.config_path, misfits)
    return LoadedPlugins(tuple(plugins), tuple(errors), tuple(kept), tuple(dict.fromkeys(left_out)))


def _settings_paths(config: Config, runtime_paths: RuntimePaths) -> dict[Path, str]:
    """The key path of each config entry's settings (`plugins[2].settings`), by the folder it loads."""
    wheres: dict[Path, str] = {}
    for index, entry in enumerate(config.plugin_entries):
        wheres.setdefault(_resolve_entry(entry, runtime_paths), f"plugins[{index}].settings")
    return wheres


def _drop_in_where(path: Path) -> str:
    return f"{DROP_IN_DIRNAME}/{path.name} (a drop-in folder; a plugins: entry gives it settings): settings"


def _installed_deps(runtime_paths: RuntimePaths) -> dict[Path, Path]:
    """The packages folder of each plugin `mindroom plugins install` put in place, by its plugin folder."""
    lock_path = runtime_paths.config_dir / LOCK_FILENAME
    if not lock_path.is_file():
        return {}
    try:
        lock = read_lock(lock_path)
    except PluginInstallError as exc:
        logger.error("plugins lock unreadable; installed plugins load without their packages", cause=exc.cause)
        return {}
    found: dict[Path, Path] = {}
    for locked in lock.plugins.values():
        folder = deps_folder(runtime_paths.storage_root, locked)
        if folder is None:
            continue
        if not folder.is_dir():
            # A lock brought to a fresh data directory: the plugin fails to import, and this says why.
            fix = "mindroom plugins install --locked"
            logger.warning("plugin packages are not installed", plugin=locked.name, path=str(folder), fix=fix)
            continue
        found[(runtime_paths.config_dir / locked.path).resolve()] = folder
    return found


def _load_one(
    path: Path, order: int, entry: PluginEntryConfig, names: dict[str, Path], deps_dir: Path | None = None
) -> Plugin:
    """Load one folder; every way it can fail is a `PluginError` naming it."""
    try:
        plugin = load_plugin_dir(path, plugin_order=order, entry_config=entry, deps_dir=deps_dir)
    except (OSError, ValueError) as exc:
        # A plugin folder is foreign input: whatever its files make the loader raise fails that plugin alone.
        raise PluginError(path.name, path, f"{type(exc).__name__}: {exc}") from None
    if plugin.name in names:
        raise PluginError(plugin.name, path, f"duplicate plugin name (also used by {names[plugin.name]})")
    return plugin


def _logged(error: PluginError) -> PluginError:
    logger.error("plugin failed to load", plugin=error.plugin, path=str(error.path), cause=error.cause)
    return error


def build_registry(
    config: Config, plugins: tuple[Plugin, ...], previous: HookRegistry | None = None, *, start_workers: bool = True
) -> HookRegistry:
    """Compile loaded plugins into a registry, with each agent's plugin allowlist from config (`start_workers`:
    see `HookRegistry.from_plugins`)."""
    allow = {name: agent.plugins for name, agent in config.agents.items() if agent.plugins is not None}
    if config.router.plugins is not None:
        allow[ROUTER_AGENT_NAME] = config.router.plugins
    return HookRegistry.from_plugins(
        plugins,
        agent_plugins=allow,
        previous=previous,
        blocking_threshold_ms=config.defaults.hooks_blocking_threshold_ms,
        room_policy_power_level=config.defaults.hooks_room_policy_power_level,
        start_workers=start_workers,
    )


def plugin_digest(folder: Path) -> str:
    """A digest of a plugin folder's source files, to tell an edited plugin from an untouched one."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in WATCHED_SUFFIXES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(folder).as_posix().encode())
            with contextlib.suppress(OSError):
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def plugin_watch_paths(config: Config, runtime_paths: RuntimePaths) -> tuple[Path, ...]:
    """The folders whose edits reload this config's plugins: each plugin folder and `plugins/`, none twice."""
    candidates = [path for path, _ in plugin_folders(config, runtime_paths)]
    candidates.append(runtime_paths.config_dir / DROP_IN_DIRNAME)
    existing = sorted({path.resolve() for path in candidates if path.is_dir()})
    return tuple(p for p in existing if not any(other in p.parents for other in existing))
