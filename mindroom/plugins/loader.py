"""Importing plugin folders: the only place foreign code is imported.

Each load imports the plugin's modules under a fresh package name and compiles them from source,
so a reload always runs the file as it is on disk now (no stale `sys.modules` entry or bytecode).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from mindroom.config.plugin import HookOverrideConfig, PluginEntryConfig
from mindroom.errors import PluginError, PluginImportError
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.logging_config import get_logger
from mindroom.plugins.dependency_path import dependency_finder
from mindroom.plugins.manifest import PluginManifest, check_api_version, read_manifest

__all__ = ["Plugin", "load_plugin_dir"]

logger = get_logger(__name__)

_generation = itertools.count(1)
_generation_lock = threading.Lock()
_PACKAGE_PREFIX = "mindroom_plugin_"


@dataclass(frozen=True, slots=True, eq=False)
class Plugin:
    """A loaded plugin: manifest, config entry, imported modules and the hooks found in them."""

    name: str
    path: Path
    manifest: PluginManifest
    entry_config: PluginEntryConfig
    plugin_order: int
    discovered_hooks: tuple[Any, ...]
    tools_module: ModuleType | None
    hooks_module: ModuleType | None
    skill_dirs: tuple[Path, ...]
    deps_dir: Path | None = None
    """The folder of the packages `mindroom plugins install` installed for it (an isolated worker imports them too)."""

    @property
    def settings(self) -> dict[str, Any]:
        """The plugin's settings from its config entry."""
        return dict(self.entry_config.settings)


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source on disk every time, never from cached bytecode."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True)


class _PluginModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the modules a plugin imports from its own package (`from . import helpers`) and loads them fresh too.

    Without it the default finder would reuse `__pycache__` bytecode, which goes stale when a file is
    edited twice within the same second and keeps its size.
    """

    def find_spec(
        self, fullname: str, path: Any, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for a module inside a plugin package, with a loader that always compiles from source."""
        if not fullname.startswith(_PACKAGE_PREFIX) or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader) and spec.origin:
            spec.loader = _FreshSourceLoader(fullname, spec.origin)
        return spec


_FINDER = _PluginModuleFinder()


def _package_for(name: str, folder: Path) -> str:
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    with _generation_lock:
        generation = next(_generation)
    safe = re.sub(r"\W", "_", name)
    package_name = f"{_PACKAGE_PREFIX}{safe}_{generation}"
    spec = importlib.machinery.ModuleSpec(package_name, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(folder)]
    sys.modules[package_name] = package
    return package_name


def _forget_generations(package_name: str, *, older: bool) -> None:
    """Drop this plugin's module entries: those of generations before `package_name`'s previous load (`older`),
    or those of `package_name` itself (a load that failed). In-flight work keeps its references.

    Only a load that succeeded forgets older ones: after a failed load the last good generation keeps running.
    """
    safe, _, generation = package_name[len(_PACKAGE_PREFIX) :].rpartition("_")
    prefix = f"{_PACKAGE_PREFIX}{safe}_"
    for module_name in [m for m in sys.modules if m.startswith(prefix)]:
        number = module_name[len(prefix) :].split(".", 1)[0]
        if not number.isdigit():
            continue
        if (older and int(number) < int(generation) - 1) or (not older and number == generation):
            sys.modules.pop(module_name, None)


def _import_module(plugin_name: str, package_name: str, folder: Path, relative: str) -> ModuleType:
    file_path = (folder / relative).resolve()
    if not file_path.is_file():
        raise PluginImportError(plugin_name, file_path, f"module file {relative!r} not found")
    if folder.resolve() not in file_path.parents:
        raise PluginImportError(plugin_name, file_path, f"module file {relative!r} is outside the plugin folder")
    stem = re.sub(r"\W", "_", Path(relative).with_suffix("").as_posix().replace("/", "."))
    module_name = f"{package_name}.{stem}"
    loader = _FreshSourceLoader(module_name, str(file_path))
    spec = importlib.util.spec_from_file_location(module_name, file_path, loader=loader)
    if spec is None:
        raise PluginImportError(plugin_name, file_path, "cannot create an import spec")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        raise PluginImportError(
            plugin_name, file_path, f"SyntaxError: {exc.msg} ({Path(exc.filename or relative).name}, line {exc.lineno})"
        ) from None
    except BaseException as exc:  # plugin import code may raise anything, even SystemExit
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise PluginImportError(plugin_name, file_path, f"{type(exc).__name__}: {exc}") from None
    return module


def _discover_hooks(module: ModuleType) -> tuple[Any, ...]:
    found: dict[int, Any] = {}
    for value in vars(module).values():
        if get_hook_metadata(value) is not None:
            found.setdefault(id(value), value)
    return tuple(found.values())


def load_plugin_dir(
    path: Path | str,
    settings: Mapping[str, Any] | None = None,
    *,
    hooks: Mapping[str, HookOverrideConfig | Mapping[str, Any]] | None = None,
    plugin_order: int = 0,
    entry_config: PluginEntryConfig | None = None,
    deps_dir: Path | None = None,
) -> Plugin:
    """Load one plugin folder the way the daemon does; the result goes straight into `HookRegistry.from_plugins`.

    `deps_dir` holds the packages `mindroom plugins install` installed for it: their names import from there.
    """
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise PluginError(folder.name, folder, "plugin folder not found")
    manifest = read_manifest(folder)
    check_api_version(manifest, folder)
    if manifest.oauth_module is not None:
        logger.warning("plugin oauth_module ignored: this daemon runs no OAuth providers", plugin=manifest.name)
    if entry_config is None:
        entry_config = PluginEntryConfig.model_validate(
            {"path": str(folder), "settings": dict(settings or {}), "hooks": dict(hooks or {})}
        )
    package_name = _package_for(manifest.name, folder)
    finder = dependency_finder()
    previous_deps = finder.register(manifest.name, deps_dir)
    imported: dict[Path, ModuleType] = {}

    def module_for(relative: str | None) -> ModuleType | None:
        if relative is None:
            return None
        key = (folder / relative).resolve()
        if key not in imported:
            imported[key] = _import_module(manifest.name, package_name, folder, relative)
        return imported[key]

    try:
        tools_module = module_for(manifest.tools_module)
        hooks_module = module_for(manifest.hooks_module)
    except PluginError:
        _forget_generations(package_name, older=False)
        finder.register(manifest.name, previous_deps)
        raise
    scanned = hooks_module if hooks_module is not None else tools_module
    discovered = _discover_hooks(scanned) if scanned is not None else ()
    skill_dirs = []
    for skill in manifest.skills:
        skill_dir = (folder / skill).resolve()
        if folder not in skill_dir.parents and skill_dir != folder:
            _forget_generations(package_name, older=False)
            finder.register(manifest.name, previous_deps)
            raise PluginError(manifest.name, skill_dir, f"skills folder {skill!r} is outside the plugin folder")
        skill_dirs.append(skill_dir)
    _forget_generations(package_name, older=True)
    return Plugin(
        name=manifest.name,
        path=folder,
        manifest=manifest,
        entry_config=entry_config,
        plugin_order=plugin_order,
        discovered_hooks=discovered,
        tools_module=tools_module,
        hooks_module=hooks_module,
        skill_dirs=tuple(skill_dirs),
        deps_dir=deps_dir,
    )
