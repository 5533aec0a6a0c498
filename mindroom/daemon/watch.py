"""`ConfigWatcher`: watch `config.yaml`, `.env`, the files the config includes and the plugin folders, and report
each quiet-after-changes moment once; `EnvFile`: whether `.env` still is what the daemon read at start.

The config's folder is watched without recursion (editors that save by renaming still count), and so are the
folders of included files and the folders an `!include_dir_*` tag walked (for `.yaml`/`.yml` files); plugin
folders recursively, for source files only. After each report the plugin folders and the included paths are
asked for again, so a reload that adds or removes a plugin or an include moves the watch with it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from watchfiles import Change, DefaultFilter, awatch

from mindroom.logging_config import get_logger
from mindroom.plugins.discovery import DROP_IN_DIRNAME, WATCHED_SUFFIXES
from mindroom.tasks import TaskOwner

__all__ = ["ConfigWatcher", "EnvFile"]

logger = get_logger(__name__)

_DEFAULT_FILTER = DefaultFilter()
_RETRY_S = 1.0
_YAML_SUFFIXES = frozenset({".yaml", ".yml"})


class _EitherEvent:
    """Looks like one event to watchfiles, set when either of two events is set."""

    def __init__(self, first: asyncio.Event, second: asyncio.Event) -> None:
        self._events = (first, second)

    def is_set(self) -> bool:
        """True once either event is set."""
        return any(event.is_set() for event in self._events)

    def set(self) -> None:
        """Set the first (watch-specific) event."""
        self._events[0].set()


class EnvFile:
    """The `.env` beside the config, as it was when the environment was read: the environment is read once,
    so a reload cannot apply its edits; it says that a restart will."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read = self._digest()
        self._noted: str | None = None

    def _digest(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None

    def note_change(self) -> bool:
        """Log (once per version) that `.env` differs from what the daemon read at start; True when it does."""
        now = self._digest()
        if now == self._read:
            self._noted = None
            return False
        if now != self._noted:
            self._noted = now
            logger.warning("`.env` changed since the start; restart to apply it", path=str(self.path))
        return True


def _plugin_file(change: Change, path: str) -> bool:
    return Path(path).suffix in WATCHED_SUFFIXES and _DEFAULT_FILTER(change, path)


def _included_folders(included: tuple[Path, ...]) -> tuple[tuple[Path, ...], Callable[[Change, str], bool]]:
    """The folders to watch for `included` (files and walked folders) and the filter that keeps their changes."""
    files = frozenset(path for path in included if not path.is_dir())
    folders = frozenset(path for path in included if path.is_dir())

    def keep(_change: Change, raw: str) -> bool:
        path = Path(raw)
        return path in files or (path.parent in folders and path.suffix in _YAML_SUFFIXES)

    return tuple(sorted(folders | {path.parent for path in files})), keep


class ConfigWatcher:
    """Calls `on_change(paths)` once the config or a plugin changed and `debounce_s` passed without more changes."""

    def __init__(
        self,
        config_path: Path,
        plugin_paths: Callable[[], tuple[Path, ...]],
        on_change: Callable[[list[str]], Awaitable[None]],
        *,
        debounce_s: float = 0.25,
        included_paths: Callable[[], tuple[Path, ...]] = tuple,
    ) -> None:
        self.config_path = config_path
        self.debounce_s = debounce_s
        self._plugin_paths = plugin_paths
        self._included_paths = included_paths
        self._on_change = on_change
        self._tasks = TaskOwner("config-watcher")
        self._pending: set[Path] = set()
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._follows: dict[str, tuple[asyncio.Event, tuple[Path, ...]]] = {}  # by task name: its stop, its paths

    def start(self) -> None:
        """Start watching (the tasks are owned here, and ended by `stop`)."""
        # `.env` too: its edits cannot apply live, and the reload they start says so.
        wanted = {self.config_path.name, DROP_IN_DIRNAME, ".env"}
        own_stop = asyncio.Event()
        self._tasks.spawn(
            self._watch((self.config_path.parent,), lambda _c, p: Path(p).name in wanted, own_stop, False),
            "watch config",
        )
        self._tasks.spawn(self._debounce_loop(), "debounce")
        self._follow()

    def _follow(self) -> None:
        """Move the plugin and included-file watches to the paths the config names now (unchanged: kept)."""
        self._follow_one("watch plugins", self._plugin_paths(), lambda paths: (paths, _plugin_file), True)
        self._follow_one("watch included files", self._included_paths(), _included_folders, False)

    def _follow_one(
        self,
        name: str,
        paths: tuple[Path, ...],
        watched: Callable[[tuple[Path, ...]], tuple[tuple[Path, ...], Callable[[Change, str], bool]]],
        recursive: bool,
    ) -> None:
        current = self._follows.get(name)
        if current is not None and current[1] == paths:
            return
        if current is not None:
            current[0].set()
            del self._follows[name]
        folders, keep = watched(paths)
        if folders:
            stop = asyncio.Event()
            self._tasks.spawn(self._watch(folders, keep, stop, recursive), name)
            self._follows[name] = (stop, paths)

    async def _watch(
        self, paths: tuple[Path, ...], keep: Callable[[Change, str], bool], stop: asyncio.Event, recursive: bool
    ) -> None:
        while not stop.is_set() and not self._stop.is_set():
            try:
                async for changes in awatch(
                    *paths, watch_filter=keep, stop_event=_EitherEvent(stop, self._stop), recursive=recursive
                ):
                    self._pending.update(Path(path) for _, path in changes)
                    self._changed.set()
            except (OSError, RuntimeError) as exc:
                logger.warning("file watcher failed; retrying", paths=[str(p) for p in paths], error=str(exc))
                await asyncio.sleep(_RETRY_S)

    async def _debounce_loop(self) -> None:
        while True:
            await self._changed.wait()
            while True:  # wait for a quiet moment, so one save (or a burst of them) is one report
                self._changed.clear()
                await asyncio.sleep(self.debounce_s)
                if not self._changed.is_set():
                    break
            paths, self._pending = sorted(str(p) for p in self._pending), set()
            logger.info("files changed", paths=paths)
            await self._on_change(paths)
            self._follow()

    async def stop(self) -> None:
        """Stop watching and end every task."""
        self._stop.set()
        for stop, _paths in self._follows.values():
            stop.set()
        await self._tasks.cancel_all()
