"""Installing, updating and removing plugins with their packages, and installing a lock's exact set.

Each change is staged beside the plugins folder and put in place last: the packages first (into a folder
named by their set), then `plugins.lock`, then the plugin folder, renamed into `plugins/<name>/` and its
manifest rewritten so a running daemon's watcher reloads it. A running generation keeps its own folder of
packages; an update leaves the previous set in place, so the last good generation can keep running when
the new one fails to import.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from mindroom.constants import PLUGIN_MANIFEST_FILENAME
from mindroom.errors import PluginError
from mindroom.logging_config import get_logger
from mindroom.plugins.deps import daemon_pins, declared_requirements, install_locked, pin_conflicts, resolve
from mindroom.plugins.lock import (
    DEPS_DIRNAME,
    LOCK_FILENAME,
    LockedDependency,
    LockedPlugin,
    PluginInstallError,
    PluginsLock,
    deps_folder,
    read_lock,
    write_lock,
)
from mindroom.plugins.manifest import PluginManifest, check_api_version, read_manifest
from mindroom.plugins.sources import Fetched, PluginSource, fetch, parse_source

__all__ = [
    "ImportCheck",
    "InstallPaths",
    "Installed",
    "install_from_lock",
    "install_plugin",
    "remove_plugin",
    "update_plugin",
]

logger = get_logger(__name__)

ImportCheck = Callable[[Path, Path | None], list[str]]
"""Imports a staged plugin folder with its packages folder the way the daemon would; the errors found."""


@dataclass(frozen=True, slots=True)
class InstallPaths:
    """Where plugins, the lock and the plugins' packages go."""

    config_dir: Path
    plugins_dir: Path
    storage_root: Path

    @property
    def lock_path(self) -> Path:
        """`plugins.lock`, beside `config.yaml`."""
        return self.config_dir / LOCK_FILENAME


@dataclass(frozen=True, slots=True)
class Installed:
    """What one install or update did: the lock entry now in place, and the commit before (an update)."""

    plugin: LockedPlugin
    previous_commit: str | None = None
    changed: bool = True


@contextmanager
def _scratch(paths: InstallPaths) -> Iterator[Path]:
    # Beside the plugins folder (same file system, so renames are atomic) but outside it: not watched.
    paths.plugins_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".plugin-staging-", dir=paths.plugins_dir.parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _checked_manifest(tree: Path) -> PluginManifest:
    """The `mindroom plugins check` rules that need no import: a valid manifest and a supported API version."""
    manifest = read_manifest(tree)
    check_api_version(manifest, tree)
    return manifest


def _relative(paths: InstallPaths, folder: Path) -> str:
    folder = folder.resolve()
    config_dir = paths.config_dir.resolve()
    return folder.relative_to(config_dir).as_posix() if folder.is_relative_to(config_dir) else str(folder)


def _clashes(name: str, dependencies: tuple[LockedDependency, ...], lock: PluginsLock) -> list[str]:
    """Packages another installed plugin has at another version (the process holds one of each)."""
    problems: list[str] = []
    for other in lock.plugins.values():
        if other.name == name:
            continue
        theirs = {canonicalize_name(dep.name): dep.version for dep in other.dependencies}
        for dep in dependencies:
            version = theirs.get(canonicalize_name(dep.name))
            if version is not None and version != dep.version:
                needs = f"plugin {name!r} needs {dep.name} {dep.version}"
                problems.append(f"{needs}, but plugin {other.name!r} uses {dep.name} {version}")
    return problems


def _nudge(folder: Path) -> None:
    """Rewrite the manifest in place: a running daemon's watcher sees the plugin changed and reloads it."""
    manifest = folder / PLUGIN_MANIFEST_FILENAME
    manifest.write_bytes(manifest.read_bytes())


def _prepare(
    paths: InstallPaths,
    source: PluginSource,
    fetched: Fetched,
    scratch: Path,
    lock: PluginsLock,
    import_check: ImportCheck | None,
) -> LockedPlugin:
    """Check the fetched tree, resolve and install its packages; the lock entry it gets."""
    try:
        manifest = _checked_manifest(fetched.tree)
    except PluginError as exc:
        raise PluginInstallError(exc.plugin, source.location, exc.cause) from None
    name = manifest.name
    wheels = scratch / "wheels"
    wheels.mkdir()
    try:
        requirements = declared_requirements(name, fetched.tree, manifest.dependencies)
        dependencies = tuple(resolve(name, fetched.tree, requirements, daemon_pins(), wheels))
    except PluginInstallError as exc:
        # Name the source's file, not the scratch copy's.
        inside = exc.path.relative_to(fetched.tree) if exc.path.is_relative_to(fetched.tree) else None
        where = Path(source.location) / inside if inside is not None else exc.path
        raise PluginInstallError(exc.plugin, where, exc.cause) from None
    problems = _clashes(name, dependencies, lock)
    if problems:
        raise PluginInstallError(name, source.location, "; ".join(problems))
    entry = LockedPlugin(
        name=name,
        source=source.location,
        ref=source.ref,
        commit=fetched.commit,
        path=_relative(paths, paths.plugins_dir / name),
        requirements=tuple(requirements),
        dependencies=dependencies,
        digest=fetched.digest,
    )
    target = deps_folder(paths.storage_root, entry)
    existed = target is None or target.is_dir()
    if target is not None:
        install_locked(name, dependencies, target, wheels)
    errors = import_check(fetched.tree, target) if import_check is not None else []
    if errors:
        if not existed and target is not None:
            shutil.rmtree(target, ignore_errors=True)
        raise PluginInstallError(name, source.location, "it does not import: " + "; ".join(errors))
    return entry


def install_plugin(
    spec: str, paths: InstallPaths, *, cwd: Path | None = None, import_check: ImportCheck | None = None
) -> Installed:
    """Install the plugin SOURCE names into `plugins/<name>/`, with its packages, and lock it.

    With `import_check`, a plugin whose modules fail to import with its packages is refused.
    """
    source = parse_source(spec, cwd or Path.cwd())
    lock = read_lock(paths.lock_path)
    with _scratch(paths) as scratch:
        fetched = fetch(source, scratch)
        name = _checked_manifest_name(fetched, source)
        destination = paths.plugins_dir / name
        if destination.exists() or name in lock.plugins:
            cause = f"already installed at {destination}; use `mindroom plugins update {name}`"
            raise PluginInstallError(name, destination, cause)
        entry = _prepare(paths, source, fetched, scratch, lock, import_check)
        write_lock(paths.lock_path, lock.with_plugin(entry))
        try:
            fetched.tree.rename(destination)
        except OSError:
            write_lock(paths.lock_path, lock)
            raise
    _nudge(destination)
    logger.info("plugin installed", plugin=name, commit=entry.commit, packages=len(entry.dependencies))
    return Installed(entry)


def _checked_manifest_name(fetched: Fetched, source: PluginSource) -> str:
    try:
        return _checked_manifest(fetched.tree).name
    except PluginError as exc:
        raise PluginInstallError(exc.plugin, source.location, exc.cause) from None


def _source_of(entry: LockedPlugin, ref: str | None) -> PluginSource:
    if entry.commit is None:
        if ref is not None:
            raise PluginInstallError(entry.name, entry.source, "--ref: a plain folder has no refs")
        return PluginSource("folder", entry.source)
    return PluginSource("git", entry.source, ref if ref is not None else entry.ref)


def update_plugin(
    name: str, paths: InstallPaths, *, ref: str | None = None, import_check: ImportCheck | None = None
) -> Installed:
    """Move an installed plugin to the newest commit of its ref (or `ref`), re-resolve and re-lock its packages.

    A new version refused (a bad manifest, a conflict, an import failing `import_check`) changes nothing.
    """
    lock = read_lock(paths.lock_path)
    entry = lock.plugins.get(name)
    if entry is None:
        raise PluginInstallError(
            name, paths.lock_path, f"not installed with `mindroom plugins install` (no entry in {LOCK_FILENAME})"
        )
    source = _source_of(entry, ref)
    destination = paths.config_dir / entry.path
    with _scratch(paths) as scratch:
        fetched = fetch(source, scratch, plugin=name)
        if fetched.commit == entry.commit and fetched.digest == entry.digest and source.ref == entry.ref:
            return Installed(entry, entry.commit, changed=False)
        if _checked_manifest_name(fetched, source) != name:
            raise PluginInstallError(name, source.location, "the new version's manifest names another plugin")
        new_entry = _prepare(paths, source, fetched, scratch, lock, import_check)
        write_lock(paths.lock_path, lock.with_plugin(new_entry))
        old = scratch / "previous"
        if destination.exists():
            destination.rename(old)
        try:
            fetched.tree.rename(destination)
        except OSError:
            if old.exists():
                old.rename(destination)
            write_lock(paths.lock_path, lock)
            raise
    _nudge(destination)
    _drop_old_sets(paths, name, keep={entry.deps_set, new_entry.deps_set})
    logger.info("plugin updated", plugin=name, previous=entry.commit, commit=new_entry.commit)
    return Installed(new_entry, entry.commit)


def _drop_old_sets(paths: InstallPaths, name: str, keep: set[str]) -> None:
    """Delete the package sets of `name` other than `keep` (the one now locked, and the last good one's)."""
    folder = paths.storage_root / DEPS_DIRNAME / name
    if folder.is_dir():
        for child in folder.iterdir():
            if child.name not in keep and not child.name.startswith("."):
                shutil.rmtree(child, ignore_errors=True)


def remove_plugin(name: str, paths: InstallPaths) -> LockedPlugin:
    """Remove an installed plugin: its folder, its packages and its lock entry."""
    lock = read_lock(paths.lock_path)
    entry = lock.plugins.get(name)
    if entry is None:
        raise PluginInstallError(
            name, paths.lock_path, f"not installed with `mindroom plugins install` (no entry in {LOCK_FILENAME})"
        )
    destination = paths.config_dir / entry.path
    if destination.is_dir():
        shutil.rmtree(destination)
    write_lock(paths.lock_path, lock.without(name))
    shutil.rmtree(paths.storage_root / DEPS_DIRNAME / name, ignore_errors=True)
    logger.info("plugin removed", plugin=name)
    return entry


def _locked_conflicts(entry: LockedPlugin, pins: dict[str, str]) -> list[str]:
    problems = pin_conflicts(entry.name, list(entry.requirements), pins)
    for dep in entry.dependencies:
        installed = pins.get(canonicalize_name(dep.name))
        if installed is not None:
            problems.append(
                f"plugin {entry.name!r} locks {dep.name} {dep.version}, but the daemon runs {dep.name} {installed}"
            )
    return problems


def install_from_lock(paths: InstallPaths) -> list[LockedPlugin]:
    """Install exactly what `plugins.lock` names: each plugin at its commit, its packages checked by hash."""
    lock = read_lock(paths.lock_path)
    if not lock.plugins:
        raise PluginInstallError(LOCK_FILENAME, paths.lock_path, "no plugins locked")
    pins = daemon_pins()
    done: list[LockedPlugin] = []
    for name, entry in sorted(lock.plugins.items()):
        problems = _locked_conflicts(entry, pins)
        if problems:
            raise PluginInstallError(name, paths.lock_path, "; ".join(problems))
        destination = paths.config_dir / entry.path
        if not destination.exists():
            _fetch_locked(entry, destination, paths)
        target = deps_folder(paths.storage_root, entry)
        if target is not None:
            install_locked(name, entry.dependencies, target, None)
        done.append(entry)
    return done


def _fetch_locked(entry: LockedPlugin, destination: Path, paths: InstallPaths) -> None:
    source = _source_of(entry, None)
    with _scratch(paths) as scratch:
        fetched = fetch(source, scratch, commit=entry.commit, plugin=entry.name)
        if entry.digest is not None and fetched.digest != entry.digest:
            raise PluginInstallError(entry.name, entry.source, "the folder's files differ from the locked digest")
        if _checked_manifest_name(fetched, source) != entry.name:
            raise PluginInstallError(entry.name, entry.source, "the locked commit's manifest names another plugin")
        destination.parent.mkdir(parents=True, exist_ok=True)
        fetched.tree.rename(destination)
    _nudge(destination)
