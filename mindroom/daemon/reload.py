"""Hot reload: build a new live state, swap it in as one reference, then restart what changed.

A reload builds everything new before touching anything live (`build`: the config is validated, every
plugin is imported under a fresh package name, a new `HookRegistry` is compiled with the old one's
telemetry). Only when that succeeded is the `LiveCell` swapped, in one assignment, so a turn that
started on the old state finishes on it and every later event sees the new one. Then `apply` restarts
the entities whose config changed and `config:reloaded` fires.

The last-good rule is per plugin: a plugin that fails to import keeps running as its last good
generation (or stays out, if it never loaded), and the new config and every other plugin apply; the
failure is logged with its cause and the admin room is told which plugin. An invalid config (or tools
and skills that do not fit) keeps the whole last good state, with the same log and notice; the next
save reloads normally. Rooms are told only which plugin or file failed, never the cause: an exception
text can hold a token or a path, and every room member reads the notice.
The coordinator knows nothing of the orchestrator: it is given `build` and `apply` as functions.

The build runs in a worker thread: parsing YAML and importing plugins may take a while, and the loop
keeps serving turns meanwhile. Nothing in a build touches the event loop; the swap happens back on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace

from mindroom.bots.commands.table import Command, is_administrator
from mindroom.bots.directory import Directory
from mindroom.bots.runtime import Entity, LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.config.overrides import ChatSettings
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.live import LiveBuild
from mindroom.daemon.watch import EnvFile
from mindroom.errors import ConfigError, MindroomError, PluginError
from mindroom.hooks.context import ConfigReloadedContext, MessageEnvelope
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_CONFIG_RELOADED
from mindroom.logging_config import get_logger, redact_text
from mindroom.plugins.skills import SkillError
from mindroom.tasks import TaskOwner
from mindroom.tool_system.catalog import ToolCatalogError

__all__ = [
    "ApplyChanges",
    "BuildLive",
    "EntityChanges",
    "ReloadCoordinator",
    "ReloadOutcome",
    "SettingsUpdate",
    "reload_command",
]

logger = get_logger(__name__)

BuildLive = Callable[[LiveState], LiveBuild]
"""Build the next live state from the current one (a plugin that fails keeps its generation from it)."""
ApplyChanges = Callable[[LiveState, "EntityChanges"], Awaitable[None]]
"""Restart what changed, given the state that was live before the swap."""
SettingsUpdate = Callable[[ChatSettings], ChatSettings]
"""A change of the settings from chat, applied to the ones live when its turn comes (changes are serialized)."""


@dataclass(frozen=True, slots=True)
class EntityChanges:
    """Which entities a new config adds, removes or changes, and which room keys are new."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    new_rooms: tuple[str, ...] = ()

    @classmethod
    def between(cls, old: Config, new: Config, known_rooms: Iterable[str]) -> EntityChanges:
        """Compare two configs (agents and teams; the router counts as changed when its own section differs)."""
        before, after = old.responders(), new.responders()
        added = tuple(name for name in after if name not in before)
        removed = tuple(name for name in before if name not in after)
        changed = [name for name in after if name in before and before[name] != after[name]]
        if old.router != new.router:
            changed.insert(0, ROUTER_AGENT_NAME)
        known = set(known_rooms)
        new_rooms = tuple(key for key in new.managed_room_keys() if key not in known)
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
    failed: tuple[str, ...] = ()
    entities: EntityChanges = EntityChanges()
    plugin_changes: tuple[str, ...] = ()
    hooks_before: int = 0
    hooks_after: int = 0
    kept: tuple[str, ...] = ()
    """Plugins that failed to load and keep running as their last good generation."""
    left_out: tuple[str, ...] = ()
    """Plugins that failed to load with no generation to keep."""

    def plugin_failures(self) -> str:
        """What an applied reload could not load, in words safe for a room ("" when everything loaded)."""
        parts = []
        if self.kept:
            parts.append(f"{_plugins(self.kept)} failed to load; the last good version keeps running")
        if self.left_out:
            parts.append(f"{_plugins(self.left_out)} failed to load and {_is_are(self.left_out)} not running")
        if not parts:
            return ""
        return "⚠️ " + "; ".join(parts) + ". The cause is in the daemon log."

    def summary(self) -> str:
        """A short account for a room, as `!reload-plugins` answers: what changed, or what failed (never why)."""
        if not self.ok:
            what = f": {', '.join(self.failed)}" if self.failed else ""
            return f"⚠️ Reload failed{what}. Keeping the last good config and plugins; the cause is in the daemon log."
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
        failures = self.plugin_failures()
        return f"🔄 Reloaded: {changes}." + (f" {failures}" if failures else "")


def _plugins(names: tuple[str, ...]) -> str:
    return redact_text(("plugin " if len(names) == 1 else "plugins ") + ", ".join(names))


def _is_are(names: tuple[str, ...]) -> str:
    return "is" if len(names) == 1 else "are"


def _plugin_changes(old: dict[str, str], new: dict[str, str]) -> tuple[str, ...]:
    changes = [f"added {name}" for name in new if name not in old]
    changes += [f"updated {name}" for name in new if name in old and old[name] != new[name]]
    changes += [f"removed {name}" for name in old if name not in new]
    return tuple(changes)


def _failed_parts(exc: MindroomError | tuple[PluginError, ...]) -> tuple[str, ...]:
    """What failed, in words safe for a room: plugin names and file names, no exception text."""
    if isinstance(exc, tuple):
        return tuple(dict.fromkeys(redact_text(f"plugin {error.plugin}") for error in exc))
    if isinstance(exc, ConfigError):
        return (exc.path.name,)
    if isinstance(exc, PluginError):
        return (redact_text(f"plugin {exc.plugin}"),)
    if isinstance(exc, SkillError):
        return ("plugin skills",)
    if isinstance(exc, ToolCatalogError):
        return ("plugin tools",)
    return ()


def _describe_error(exc: MindroomError | tuple[PluginError, ...]) -> str:
    if isinstance(exc, tuple):
        return "\n".join(f"{error.path}: {error.cause}" for error in exc)
    if isinstance(exc, ConfigError):
        return f"{exc.path}: " + "; ".join(exc.problems)
    if isinstance(exc, PluginError):
        return f"{exc.path}: {exc.cause}"
    return str(exc)


class ReloadCoordinator:
    """Serializes reloads (from file changes or `!reload-plugins`), swaps the live cell, and reports outcomes.

    It reads who is where for the router (it fires `config:reloaded` and tells the admin room).
    """

    def __init__(
        self,
        cell: LiveCell,
        directory: Directory,
        *,
        build: BuildLive,
        apply: ApplyChanges,
        on_outcome: Callable[[ReloadOutcome], None] | None = None,
        env_file: EnvFile | None = None,
    ) -> None:
        self.cell = cell
        self.directory = directory
        self.history: deque[ReloadOutcome] = deque(maxlen=256)
        self._build = build
        self._apply = apply
        self._on_outcome = on_outcome
        self._lock = asyncio.Lock()
        self._tasks = TaskOwner("reload")
        self._last_notice: str | None = None
        self._stopping = False
        self._env_file = env_file

    async def on_files_changed(self, paths: list[str]) -> None:
        """What the file watcher calls: one reload for a burst of saves."""
        await self._reload_logged("file change")

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

        self._tasks.spawn(run(), "reload")
        return decided

    async def _reload_logged(
        self, reason: str, *, on_decided: Callable[[ReloadOutcome], None] | None = None
    ) -> ReloadOutcome | None:
        """`reload`, with an unexpected failure (say, the homeserver refusing a login) logged instead of raised."""
        if self._stopping:
            return None
        try:
            return await self.reload(reason, on_decided=on_decided)
        except Exception:
            logger.exception("reload failed after the swap; some entities may not have restarted", reason=reason)
            return None

    async def change_settings(self, update: SettingsUpdate, reason: str, *, rebuild: bool) -> ReloadOutcome | None:
        """Make a change of the settings from chat live, serialized with reloads: room and thread settings are
        swapped in with the rest of the live state as it is; a config key's change (`rebuild`) is a reload."""
        if rebuild:
            return await self.reload(reason, update=update)
        async with self._lock:
            live = self.cell.live
            self.cell.swap(replace(live, settings=update(live.settings)))  # one reference, as a reload swaps
        return None

    async def reload(
        self,
        reason: str,
        *,
        on_decided: Callable[[ReloadOutcome], None] | None = None,
        update: SettingsUpdate | None = None,
    ) -> ReloadOutcome:
        """Reload config and plugins (an invalid config keeps the last good state, a plugin that fails its last
        good generation), with the settings from chat changed by `update` if given. Serialized."""
        async with self._lock:
            if self._env_file is not None:
                self._env_file.note_change()
            outcome = await self._reload(reason, on_decided or (lambda _o: None), update)
        self.history.append(outcome)
        if self._on_outcome is not None:
            self._on_outcome(outcome)
        return outcome

    async def _reload(
        self, reason: str, on_decided: Callable[[ReloadOutcome], None], update: SettingsUpdate | None = None
    ) -> ReloadOutcome:
        started = time.time()
        old = self.cell.live
        base = old if update is None else replace(old, settings=update(old.settings))  # built on the new settings
        try:
            built = await asyncio.to_thread(self._build, base)
        except MindroomError as exc:
            error = _describe_error(exc)
            logger.error("reload failed; keeping the last good config and plugins", reason=reason, error=error)
            failed = ReloadOutcome(
                False, reason, started, finished_at=time.time(), error=redact_text(error), failed=_failed_parts(exc)
            )
            on_decided(failed)
            await self._notify_admin(failed.summary(), error)
            return failed
        new = built.live
        entities = EntityChanges.between(old.config, new.config, self.directory.room_ids)
        self.cell.swap(new)  # one reference, so no event can see a half-new state
        old.registry.mark_superseded()  # hooks still running on it see `ctx.is_active()` turn False
        activated = time.time()
        plugin_error = _describe_error(built.plugin_errors) if built.plugin_errors else None
        outcome = ReloadOutcome(
            True,
            reason,
            started,
            activated_at=activated,
            error=redact_text(plugin_error) if plugin_error else None,
            failed=_failed_parts(built.plugin_errors),
            entities=entities,
            plugin_changes=_plugin_changes(dict(old.plugin_digests), dict(new.plugin_digests)),
            hooks_before=len(old.registry),
            hooks_after=len(new.registry),
            kept=built.kept,
            left_out=built.left_out,
        )
        logger.info(
            "reloaded",
            reason=reason,
            swap_ms=round((activated - started) * 1000, 1),
            plugins=list(outcome.plugin_changes),
            added=list(entities.added),
            removed=list(entities.removed),
            changed=list(entities.changed),
            hooks=len(new.registry),
        )
        if plugin_error is not None:
            logger.error(
                "reload applied, but plugins failed to load",
                reason=reason,
                kept_last_good=list(built.kept),
                left_out=list(built.left_out),
                error=plugin_error,
            )
        on_decided(outcome)
        await self._apply(old, entities)
        await self._fire_reloaded(old.config, new, outcome)
        if plugin_error is not None:
            await self._notify_admin(outcome.plugin_failures(), plugin_error)
        elif self._last_notice is not None:
            self._last_notice = None
            await self._notify_admin("✅ Reload succeeded; the new config and plugins are live.", None)
        return replace(outcome, finished_at=time.time())

    async def _fire_reloaded(self, old: Config, live: LiveState, outcome: ReloadOutcome) -> None:
        router = self.directory.router
        bindings = router.bindings(live).fields() if router is not None else {"config": live.config}
        ctx = ConfigReloadedContext(
            old_config=old,
            new_config=live.config,
            added_entities=outcome.entities.added,
            removed_entities=outcome.entities.removed,
            changed_entities=outcome.entities.changed,
            plugin_changes=outcome.plugin_changes,
            **bindings,
        )
        await emit(live.registry, EVENT_CONFIG_RELOADED, ctx)

    async def _notify_admin(self, text: str, error: str | None) -> None:
        key = self.cell.live.config.admin_room
        router = self.directory.router
        if error is not None:
            if error == self._last_notice:
                return
            self._last_notice = error
        if not key or router is None:
            return
        try:
            room_id = self.directory.room_ids.get(key)  # never resolved anew: the alias may point to a stranger's room
            if room_id is not None:
                await router.client.send_message(room_id, text, msgtype="m.notice")
        except Exception as exc:  # a notice is best effort; the log already has the error
            logger.warning("admin notice failed", room=key, error=str(exc))

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Take no more reloads; one in progress may finish within `timeout_s`, then everything is cancelled."""
        self._stopping = True
        if self._lock.locked():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    async with self._lock:
                        pass
        await self._tasks.cancel_all()


def reload_command(coordinator: ReloadCoordinator) -> Command:
    """`!reload-plugins`, for the orchestrator to register into the command table."""

    async def run(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        # Reloading runs the plugins' code again and restarts agents: an administrator's call, as in MindRoom.
        if not is_administrator(live, envelope, "reload-plugins"):
            return "Only administrators can reload the config and plugins."
        logger.info("reload requested in chat", requester=envelope.requester_id, room_id=envelope.room_id)
        # Answered once the swap is decided: restarting an agent waits for in-flight turns, this one included.
        outcome = await asyncio.shield(coordinator.request("!reload-plugins"))
        return outcome.summary()

    return Command("reload-plugins", "reload config.yaml and every plugin now, and say what changed", run)
