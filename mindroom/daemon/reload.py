"""Hot reload: watch `config.yaml` and the plugin folders, then validate, import afresh, and swap atomically.

A reload builds everything new before touching anything live: the config is validated, every plugin
is imported under a fresh package name and a new `HookRegistry` is compiled (with the old one's
telemetry). Only when all of that succeeded are config, plugins and registry swapped in, in one step
without an await, so a turn that started on the old registry finishes on it and every later event
sees the new one. Then the entities whose config changed are restarted and `config:reloaded` fires.

Anything invalid keeps the last good state: the error (file and cause) is logged and the admin room
gets a short notice; the next save reloads normally.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watchfiles import Change, DefaultFilter, awatch

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.errors import ConfigError, MindroomError, PluginError
from mindroom.hooks.context import ConfigReloadedContext
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_CONFIG_RELOADED
from mindroom.logging_config import get_logger
from mindroom.plugins.discovery import DROP_IN_DIRNAME, build_registry, load_plugins, plugin_folders

if TYPE_CHECKING:
    from mindroom.bots.runtime import DaemonRuntime
    from mindroom.config.main import Config
    from mindroom.daemon.orchestrator import Orchestrator
    from mindroom.plugins.loader import Plugin

__all__ = ["EntityChanges", "ReloadCoordinator", "ReloadOutcome", "plugin_digest"]

logger = get_logger(__name__)

WATCHED_SUFFIXES = frozenset({".py", ".json", ".yaml", ".yml", ".toml", ".md"})
_DEFAULT_FILTER = DefaultFilter()


@dataclass(frozen=True, slots=True)
class EntityChanges:
    """Which entities a new config adds, removes or changes, and which room keys are new."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    new_rooms: tuple[str, ...] = ()

    @classmethod
    def between(cls, old: Config, new: Config, known_rooms: Iterable[str]) -> EntityChanges:
        """Compare two configs (the router counts as changed when its own section differs)."""
        added = tuple(name for name in new.agents if name not in old.agents)
        removed = tuple(name for name in old.agents if name not in new.agents)
        changed = [name for name in new.agents if name in old.agents and old.agents[name] != new.agents[name]]
        if old.router != new.router:
            changed.insert(0, ROUTER_AGENT_NAME)
        known = set(known_rooms)
        wanted = [*new.all_room_keys(), *([new.admin_room] if new.admin_room else [])]
        new_rooms = tuple(dict.fromkeys(key for key in wanted if key not in known))
        return cls(added, removed, tuple(changed), new_rooms)


@dataclass(frozen=True, slots=True)
class ReloadOutcome:
    """What one reload did: success or the error that kept the last good state, and what changed."""

    ok: bool
    reason: str
    started_at: float
    activated_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    entities: EntityChanges = EntityChanges()
    plugin_changes: tuple[str, ...] = ()
    hooks_before: int = 0
    hooks_after: int = 0

    def summary(self) -> str:
        """A short human-readable account, as `!reload-plugins` answers."""
        if not self.ok:
            return f"⚠️ Reload failed; keeping the last good config and plugins.\n{self.error}"
        parts = []
        if self.plugin_changes:
            parts.append("plugins " + ", ".join(self.plugin_changes))
        for label, names in (
            ("added", self.entities.added),
            ("removed", self.entities.removed),
            ("restarted", self.entities.changed),
            ("new rooms", self.entities.new_rooms),
        ):
            if names:
                parts.append(f"{label} {', '.join(names)}")
        if self.hooks_before != self.hooks_after:
            parts.append(f"hooks {self.hooks_before} -> {self.hooks_after}")
        changes = "; ".join(parts) if parts else "nothing changed"
        return f"🔄 Reloaded: {changes}."


def plugin_digest(folder: Path) -> str:
    """A digest of a plugin folder's source files, to tell an edited plugin from an untouched one."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in WATCHED_SUFFIXES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(folder).as_posix().encode())
            with contextlib.suppress(OSError):
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _plugin_changes(old: dict[str, str], new: dict[str, str]) -> tuple[str, ...]:
    changes = [f"added {name}" for name in new if name not in old]
    changes += [f"updated {name}" for name in new if name in old and old[name] != new[name]]
    changes += [f"removed {name}" for name in old if name not in new]
    return tuple(changes)


def _describe_error(exc: MindroomError | list[PluginError]) -> str:
    if isinstance(exc, list):
        return "\n".join(f"{error.path}: {error.cause}" for error in exc)
    if isinstance(exc, ConfigError):
        return f"{exc.path}: " + "; ".join(exc.problems)
    if isinstance(exc, PluginError):
        return f"{exc.path}: {exc.cause}"
    return str(exc)


class ReloadCoordinator:
    """Serializes reloads (from file changes or `!reload-plugins`) and owns the file watcher's tasks."""

    def __init__(self, orchestrator: Orchestrator, runtime: DaemonRuntime, *, debounce_s: float = 0.25) -> None:
        self.orchestrator = orchestrator
        self.runtime = runtime
        self.debounce_s = debounce_s
        self.history: deque[ReloadOutcome] = deque(maxlen=256)
        self._lock = asyncio.Lock()
        self._digests = {plugin.name: plugin_digest(plugin.path) for plugin in runtime.plugins}
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: set[Path] = set()
        self._changed = asyncio.Event()
        self._outcome_added = asyncio.Event()
        self._last_notice: str | None = None
        self._plugin_watch: tuple[asyncio.Task[None], asyncio.Event, tuple[Path, ...]] | None = None
        self._stop_watch = asyncio.Event()

    # -- watching ----------------------------------------------------------------------------------
    def start_watching(self) -> None:
        """Watch the config file, its `plugins/` folder and every configured plugin folder.

        The config's folder is watched without recursion (editors that save by renaming still count);
        plugin folders recursively, for source files only. The environment (`.env`) is read at start.
        """
        paths = self.runtime.runtime_paths
        wanted = {paths.config_path.name, DROP_IN_DIRNAME}
        self._own(self._watch((paths.config_dir,), lambda _c, p: Path(p).name in wanted, self._stop_watch, False))
        self._own(self._debounce_loop())
        self._restart_plugin_watch()

    def _own(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _plugin_paths(self) -> tuple[Path, ...]:
        runtime_paths = self.runtime.runtime_paths
        candidates = [path for path, _ in plugin_folders(self.runtime.config, runtime_paths)]
        candidates.append(runtime_paths.config_dir / DROP_IN_DIRNAME)
        existing = sorted({path.resolve() for path in candidates if path.is_dir()})
        return tuple(p for p in existing if not any(other in p.parents for other in existing))

    def _restart_plugin_watch(self) -> None:
        paths = self._plugin_paths()
        current = self._plugin_watch
        if current is not None and current[2] == paths:
            return
        if current is not None:
            current[1].set()
        self._plugin_watch = None
        if paths:
            stop = asyncio.Event()
            task = self._own(self._watch(paths, _plugin_file, stop, True))
            self._plugin_watch = (task, stop, paths)

    async def _watch(
        self, paths: tuple[Path, ...], keep: Callable[[Change, str], bool], stop: asyncio.Event, recursive: bool
    ) -> None:
        while not stop.is_set() and not self._stop_watch.is_set():
            try:
                async for changes in awatch(
                    *paths, watch_filter=keep, stop_event=_AnyStop(stop, self._stop_watch), recursive=recursive
                ):
                    self._pending.update(Path(path) for _, path in changes)
                    self._changed.set()
            except (OSError, RuntimeError) as exc:
                logger.warning("file watcher failed; retrying", paths=[str(p) for p in paths], error=str(exc))
                await asyncio.sleep(1.0)

    async def _debounce_loop(self) -> None:
        while True:
            await self._changed.wait()
            while True:  # wait for a quiet moment, so one save (or a burst of them) is one reload
                self._changed.clear()
                await asyncio.sleep(self.debounce_s)
                if not self._changed.is_set():
                    break
            paths, self._pending = sorted(str(p) for p in self._pending), set()
            logger.info("files changed; reloading", paths=paths)
            await self._reload_logged("file change")
            self._restart_plugin_watch()

    # -- reloading ---------------------------------------------------------------------------------
    def request(self, reason: str) -> asyncio.Future[ReloadOutcome]:
        """Start a reload in a task this coordinator owns; the future resolves once the swap is decided."""
        decided: asyncio.Future[ReloadOutcome] = asyncio.get_running_loop().create_future()

        def settle(outcome: ReloadOutcome) -> None:
            if not decided.done():
                decided.set_result(outcome)

        async def run() -> None:
            try:
                await self._reload_logged(reason, on_decided=settle)
            finally:
                settle(ReloadOutcome(False, reason, time.time(), error="the reload failed unexpectedly; see the log"))

        self._own(run())
        return decided

    async def _reload_logged(
        self, reason: str, *, on_decided: Callable[[ReloadOutcome], None] | None = None
    ) -> ReloadOutcome | None:
        """`reload`, with an unexpected failure (say, the homeserver refusing a login) logged instead of raised."""
        try:
            return await self.reload(reason, on_decided=on_decided)
        except Exception:
            logger.exception("reload failed after the swap; some entities may not have restarted", reason=reason)
            return None

    async def reload(self, reason: str, *, on_decided: Callable[[ReloadOutcome], None] | None = None) -> ReloadOutcome:
        """Reload config and plugins; keep the last good state on any error. Serialized."""
        async with self._lock:
            outcome = await self._reload(reason, on_decided or (lambda _o: None))
        self.history.append(outcome)
        self._outcome_added.set()
        return outcome

    async def _reload(self, reason: str, on_decided: Callable[[ReloadOutcome], None]) -> ReloadOutcome:
        runtime = self.runtime
        started = time.time()
        old_config, old_registry = runtime.config, runtime.registry
        try:
            config = self.orchestrator.load_config()
            loaded = load_plugins(config, runtime.runtime_paths)
            if loaded.errors:
                raise _PluginLoadError(list(loaded.errors))
            tools = self.orchestrator.build_tools(config, loaded.plugins)
            registry = build_registry(config, loaded.plugins, previous=old_registry)
        except (MindroomError, _PluginLoadError) as exc:
            error = _describe_error(exc.errors if isinstance(exc, _PluginLoadError) else exc)
            logger.error("reload failed; keeping the last good config and plugins", reason=reason, error=error)
            failed = ReloadOutcome(False, reason, started, finished_at=time.time(), error=error)
            on_decided(failed)
            await self._notify_admin(f"⚠️ Reload failed; keeping the last good config and plugins.\n{error}", error)
            return failed
        digests = {plugin.name: plugin_digest(plugin.path) for plugin in loaded.plugins}
        entities = EntityChanges.between(old_config, config, runtime.room_ids)
        # The swap: no await between these assignments, so no event can see a half-new state.
        runtime.config, runtime.registry, runtime.plugins, runtime.tools = config, registry, loaded.plugins, tools
        activated = time.time()
        outcome = ReloadOutcome(
            True,
            reason,
            started,
            activated_at=activated,
            entities=entities,
            plugin_changes=_plugin_changes(self._digests, digests),
            hooks_before=len(old_registry),
            hooks_after=len(registry),
        )
        self._digests = digests
        logger.info(
            "reloaded",
            reason=reason,
            swap_ms=round((activated - started) * 1000, 1),
            plugins=list(outcome.plugin_changes),
            added=list(entities.added),
            removed=list(entities.removed),
            changed=list(entities.changed),
            hooks=len(registry),
        )
        on_decided(outcome)
        await self.orchestrator.apply_entity_changes(old_config, entities)
        await self._fire_reloaded(old_config, config, outcome, loaded.plugins)
        if self._last_notice is not None:
            self._last_notice = None
            await self._notify_admin("✅ Reload succeeded; the new config and plugins are live.", None)
        return replace(outcome, finished_at=time.time())

    async def _fire_reloaded(
        self, old: Config, new: Config, outcome: ReloadOutcome, plugins: tuple[Plugin, ...]
    ) -> None:
        router = self.runtime.bots.get(ROUTER_AGENT_NAME)
        bindings = router.hook_bindings() if router is not None else {"config": new}
        ctx = ConfigReloadedContext(
            old_config=old,
            new_config=new,
            added_entities=outcome.entities.added,
            removed_entities=outcome.entities.removed,
            changed_entities=outcome.entities.changed,
            plugin_changes=outcome.plugin_changes,
            **bindings,
        )
        await emit(self.runtime.registry, EVENT_CONFIG_RELOADED, ctx)

    async def _notify_admin(self, text: str, error: str | None) -> None:
        runtime = self.runtime
        key = runtime.config.admin_room
        router = runtime.bots.get(ROUTER_AGENT_NAME)
        if error is not None:
            if error == self._last_notice:
                return
            self._last_notice = error
        if not key or router is None:
            return
        try:
            room_id = runtime.room_ids.get(key) or await router.client.resolve_room(key)
            if room_id is not None:
                await router.client.send_message(room_id, text, msgtype="m.notice")
        except Exception as exc:  # a notice is best effort; the log already has the error
            logger.warning("admin notice failed", room=key, error=str(exc))

    async def wait_for_outcome(self, since: float, timeout_s: float) -> ReloadOutcome:
        """The first reload that started at or after `since` (for tests and benchmarks)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for outcome in self.history:
                if outcome.started_at >= since:
                    return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no reload happened in time")
            self._outcome_added.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._outcome_added.wait(), remaining)

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Stop watching; a reload in progress may finish within `timeout_s`, then everything is cancelled."""
        self._stop_watch.set()
        if self._plugin_watch is not None:
            self._plugin_watch[1].set()
        tasks = set(self._tasks)
        if self._lock.locked():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    async with self._lock:
                        pass
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _PluginLoadError(Exception):
    def __init__(self, errors: list[PluginError]) -> None:
        super().__init__("; ".join(str(error) for error in errors))
        self.errors = errors


class _AnyStop:
    """Looks like one event to watchfiles, set when either of two events is set."""

    def __init__(self, first: asyncio.Event, second: asyncio.Event) -> None:
        self._events = (first, second)

    def is_set(self) -> bool:
        """True once either event is set."""
        return any(event.is_set() for event in self._events)

    def set(self) -> None:
        """Set the first (watch-specific) event."""
        self._events[0].set()


def _plugin_file(change: Change, path: str) -> bool:
    return Path(path).suffix in WATCHED_SUFFIXES and _DEFAULT_FILTER(change, path)
