"""`plugins.lock`: what `mindroom plugins install` put in place, so the same set can be installed again.

The lock is JSON beside `config.yaml`. For each installed plugin it records where the plugin came from
(`source`, `ref`), the exact `commit` (or, for a plain folder, a `digest` of its files), and the Python
packages installed for it: name, version, wheel file and sha256. The packages of a plugin live in
`<data dir>/plugin-deps/<plugin>/<set>/`, where `<set>` is a digest of that list, so a new set never
overwrites the one a running generation imports from.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mindroom.errors import PluginError
from mindroom.hooks.state import PLUGIN_NAME_PATTERN

__all__ = [
    "DEPS_DIRNAME",
    "LOCK_FILENAME",
    "LOCK_VERSION",
    "LockedDependency",
    "LockedPlugin",
    "PluginInstallError",
    "PluginsLock",
    "deps_folder",
    "read_lock",
    "write_lock",
]

LOCK_FILENAME = "plugins.lock"
LOCK_VERSION = 1
DEPS_DIRNAME = "plugin-deps"


class PluginInstallError(PluginError):
    """A plugin could not be installed, updated or removed; names the plugin (or source) and the cause."""


@dataclass(frozen=True, slots=True)
class LockedDependency:
    """One Python package installed for a plugin, pinned to a wheel by its hash."""

    name: str
    version: str
    file: str
    sha256: str

    def requirement_line(self) -> str:
        """The line pip reads in hash-checking mode."""
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


@dataclass(frozen=True, slots=True)
class LockedPlugin:
    """One installed plugin: its source, the commit in place, and its packages."""

    name: str
    source: str
    ref: str | None
    commit: str | None
    path: str
    requirements: tuple[str, ...] = ()
    dependencies: tuple[LockedDependency, ...] = ()
    digest: str | None = None
    """For a plain folder (no git): a digest of its source files."""

    @property
    def deps_set(self) -> str:
        """Names the folder holding exactly `dependencies` (empty when there are none)."""
        if not self.dependencies:
            return ""
        lines = sorted(dep.requirement_line() for dep in self.dependencies)
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        """The plugin's entry as written to the lock."""
        data = asdict(self)
        data.pop("name")
        data["requirements"] = list(self.requirements)
        data["dependencies"] = [asdict(dep) for dep in self.dependencies]
        return data


@dataclass(frozen=True, slots=True)
class PluginsLock:
    """Every installed plugin, by name."""

    plugins: dict[str, LockedPlugin] = field(default_factory=dict)

    def with_plugin(self, plugin: LockedPlugin) -> PluginsLock:
        """A copy with `plugin` added or replaced."""
        return PluginsLock({**self.plugins, plugin.name: plugin})

    def without(self, name: str) -> PluginsLock:
        """A copy without the plugin `name`."""
        return PluginsLock({key: value for key, value in self.plugins.items() if key != name})


def deps_folder(storage_root: Path, plugin: LockedPlugin) -> Path | None:
    """The folder a plugin's packages are installed in, or None when it has none."""
    if not plugin.dependencies:
        return None
    return storage_root / DEPS_DIRNAME / plugin.name / plugin.deps_set


def _text(entry: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = entry.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}.{key}: expected a non-empty string")
    return value


def _plugin(plugin: str, entry: Any, where: str) -> LockedPlugin:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object")
    # The name and path place files (the plugin's folder, its packages): a lock from elsewhere must not move them.
    if not PLUGIN_NAME_PATTERN.fullmatch(plugin):
        raise ValueError(f"{where}: not a plugin name")
    if (
        not isinstance(entry.get("path"), str)
        or Path(entry["path"]).name != plugin
        or ".." in Path(entry["path"]).parts
    ):
        raise ValueError(f"{where}.path: expected a folder named {plugin!r}, without '..'")
    deps: list[LockedDependency] = []
    raw_deps = entry.get("dependencies", [])
    if not isinstance(raw_deps, list):
        raise ValueError(f"{where}.dependencies: expected a list")
    for index, dep in enumerate(raw_deps):
        dep_where = f"{where}.dependencies[{index}]"
        if not isinstance(dep, dict):
            raise ValueError(f"{dep_where}: expected an object")
        sha = _text(dep, "sha256", dep_where)
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError(f"{dep_where}.sha256: expected 64 lowercase hex digits")
        name, version, file = (_text(dep, key, dep_where) for key in ("name", "version", "file"))
        deps.append(LockedDependency(name=name, version=version, file=file, sha256=sha))
    requirements = entry.get("requirements", [])
    if not isinstance(requirements, list) or not all(isinstance(r, str) for r in requirements):
        raise ValueError(f"{where}.requirements: expected a list of strings")
    return LockedPlugin(
        name=plugin,
        source=_text(entry, "source", where),
        ref=_text(entry, "ref", where, optional=True),
        commit=_text(entry, "commit", where, optional=True),
        path=_text(entry, "path", where),
        requirements=tuple(requirements),
        dependencies=tuple(deps),
        digest=_text(entry, "digest", where, optional=True),
    )


def read_lock(path: Path) -> PluginsLock:
    """The lock at `path` (empty when the file does not exist); raises `PluginInstallError` naming the bad key."""
    if not path.is_file():
        return PluginsLock()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("version") != LOCK_VERSION:
            raise ValueError(f"version: expected {LOCK_VERSION}")
        entries = raw.get("plugins", {})
        if not isinstance(entries, dict):
            raise ValueError("plugins: expected an object")
        return PluginsLock({name: _plugin(name, entry, f"plugins.{name}") for name, entry in entries.items()})
    except (OSError, ValueError) as exc:
        raise PluginInstallError(LOCK_FILENAME, path, f"unreadable lock: {exc}") from None


def write_lock(path: Path, lock: PluginsLock) -> None:
    """Write the lock in one step (a temporary file renamed over it), plugins sorted by name."""
    data = {
        "version": LOCK_VERSION,
        "plugins": {name: lock.plugins[name].to_json() for name in sorted(lock.plugins)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".plugins-lock-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=2) + "\n")
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
