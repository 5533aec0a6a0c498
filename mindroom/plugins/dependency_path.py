"""The import path of a plugin's own packages: a finder that serves each plugin's package names from its folder.

Each installed plugin's packages sit in a folder of their own (see `mindroom.plugins.lock`). The finder is
consulted after the daemon's own import path, for top-level names only, and answers only for the names
found in a registered folder: `humanize` comes from the folder of the plugin that installed it, and a
name the daemon has comes from the daemon. Installing refuses a second version of a package another
plugin or the daemon already uses, because a module, once imported, is shared by the whole process.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from mindroom.logging_config import get_logger

__all__ = ["DependencyFinder", "dependency_finder", "top_level_names"]

logger = get_logger(__name__)

_SKIPPED_SUFFIXES = (".dist-info", ".data", ".egg-info")


def top_level_names(folder: Path) -> frozenset[str]:
    """The importable top-level names in a folder pip installed into (packages, modules, extensions)."""
    names: set[str] = set()
    for child in folder.iterdir():
        if child.name.startswith("."):
            continue
        if child.is_dir():
            if child.name.endswith(_SKIPPED_SUFFIXES) or child.name in ("__pycache__", "bin"):
                continue
            names.add(child.name)
        elif child.suffix == ".py":
            names.add(child.stem)
        elif child.suffix in (".so", ".pyd"):
            names.add(child.name.split(".", 1)[0])
    return frozenset(name for name in names if name.isidentifier())


class DependencyFinder(importlib.metadata.DistributionFinder):
    """A meta path finder for the plugins' packages, placed after the daemon's own path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folders: dict[str, Path] = {}
        self._by_name: dict[str, Path] = {}

    def register(self, plugin: str, folder: Path | None) -> Path | None:
        """Serve `plugin`'s packages from `folder` (None: it has none); returns the folder it had before."""
        with self._lock:
            before = self._folders.get(plugin)
            if folder is None:
                self._folders.pop(plugin, None)
            else:
                self._folders[plugin] = folder
            self._rebuild(before if before != folder else None)
        return before

    def _rebuild(self, replaced: Path | None) -> None:
        by_name: dict[str, Path] = {}
        for plugin, folder in sorted(self._folders.items()):
            if not folder.is_dir():
                logger.warning("plugin packages folder is missing", plugin=plugin, path=str(folder))
                continue
            for name in top_level_names(folder):
                by_name.setdefault(name, folder)
        if replaced is not None:
            # A new set for the plugin: its next generation imports the packages afresh; the one running keeps its own.
            for name, folder in self._by_name.items():
                if folder == replaced and by_name.get(name) != folder:
                    _forget_module(name)
        self._by_name = by_name

    def find_spec(
        self, fullname: str, path: Iterable[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for a top-level name one plugin's folder holds."""
        if path is not None:
            return None
        folder = self._by_name.get(fullname)
        if folder is None:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [str(folder)])

    def find_distributions(self, context: Any = None) -> Iterable[importlib.metadata.Distribution]:
        """The metadata of the plugins' packages, so `importlib.metadata.version(name)` works inside them."""
        if context is None:
            context = importlib.metadata.DistributionFinder.Context()
        if context.name is None:
            return iter(())
        folders = sorted({str(folder) for folder in self._folders.values()})
        return importlib.metadata.MetadataPathFinder.find_distributions(
            importlib.metadata.DistributionFinder.Context(name=context.name, path=folders)
        )


def _forget_module(name: str) -> None:
    for module_name in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        sys.modules.pop(module_name, None)


_FINDER = DependencyFinder()


def dependency_finder() -> DependencyFinder:
    """The process's finder, on `sys.meta_path` after the daemon's own finders."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
    return _FINDER
