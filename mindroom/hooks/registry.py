"""`HookRegistry`: plugins compiled into an immutable, ordered snapshot of hooks per event.

Reload builds a new registry and swaps one reference; per-hook telemetry and breaker state carry
over from the previous registry so a reload neither forgets failures nor resets counters. After the
swap the reload calls `mark_superseded()` on the old one, so its hooks' `ctx.is_active()` turns False.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from mindroom.config.plugin import HookOverrideConfig, PluginEntryConfig
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks.background import BackgroundObservers
from mindroom.hooks.breaker import CircuitBreaker
from mindroom.hooks.decorators import HookMetadata, get_hook_metadata
from mindroom.hooks.hook_context import RegistryGeneration
from mindroom.hooks.isolated import IsolatedPlugins, isolated_callback
from mindroom.hooks.room_policy import RoomHookPolicies
from mindroom.hooks.types import default_timeout_ms
from mindroom.logging_config import get_logger

__all__ = ["DEFAULT_BLOCKING_THRESHOLD_MS", "HookRegistry", "HookStats", "PluginLike", "RegisteredHook"]

logger = get_logger(__name__)

DEFAULT_BLOCKING_THRESHOLD_MS = 100.0
_DURATION_SAMPLES = 512
_SCOPED_CACHE_LIMIT = 4096


class PluginLike(Protocol):
    """What `HookRegistry.from_plugins` needs from a plugin (the spec's `stub_plugin` shape)."""

    @property
    def name(self) -> str:
        """The plugin's name (used for `state_root` and telemetry)."""

    @property
    def discovered_hooks(self) -> Sequence[Any]:
        """The `@hook` callbacks found in the plugin, in definition order."""

    @property
    def entry_config(self) -> PluginEntryConfig | None:
        """The plugin's `config.yaml` entry: settings and per-hook overrides."""

    @property
    def plugin_order(self) -> int:
        """Position among plugins; ties in priority run in this order."""


@dataclass(slots=True, eq=False)
class HookStats:
    """Mutable per-hook counters, and the hook's circuit breaker, owned by the runtime."""

    calls: int = 0
    failures: int = 0
    timeouts: int = 0
    declines: int = 0
    blocked_loop: int = 0
    skipped: int = 0
    monitored_effects: int = 0
    dropped: int = 0
    """Background calls dropped: their plugin's queue was full, or shutdown's grace ran out before them."""
    last_error: str | None = None
    durations_ms: deque[float] = field(default_factory=lambda: deque(maxlen=_DURATION_SAMPLES))
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)

    # The breaker's numbers, under the names these counters had before the breaker was its own object.
    @property
    def consecutive_failures(self) -> int:
        """Failures since the last success (`breaker.consecutive`)."""
        return self.breaker.consecutive

    @property
    def open_until(self) -> float:
        """Breaker clock time until which the hook is skipped; 0.0 when closed (`breaker.open_until`)."""
        return self.breaker.open_until

    @property
    def trips(self) -> int:
        """Times the breaker opened (`breaker.trips`)."""
        return self.breaker.trips

    @trips.setter
    def trips(self, value: int) -> None:
        self.breaker.trips = value


@dataclass(frozen=True, slots=True, eq=False)
class RegisteredHook:
    """One compiled hook: callback, effective settings, filters, and its telemetry cell."""

    plugin_name: str
    hook_name: str
    event_name: str
    callback: Any
    priority: int
    timeout_ms: int
    timeout_s: float
    agents: tuple[str, ...] | None
    rooms: tuple[str, ...] | None
    fail_closed: bool
    monitor: bool
    settings: dict[str, Any]
    plugin_order: int
    order_key: tuple[int, int, int, int]
    logger: Any
    stats: HookStats
    required: bool = False
    background: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity across reloads: (plugin, hook, event)."""
        return (self.plugin_name, self.hook_name, self.event_name)

    @property
    def mode(self) -> str:
        """`enforce` or `monitor`."""
        return "monitor" if self.monitor else "enforce"


def _effective(meta: HookMetadata, override: HookOverrideConfig | None) -> tuple[bool, int, int, bool, bool]:
    """(enabled, priority, timeout_ms, fail_closed, monitor) after config overrides."""
    priority = meta.priority
    timeout_ms = meta.timeout_ms if meta.timeout_ms is not None else default_timeout_ms(meta.event_name)
    fail_closed = meta.fail_closed
    enabled, monitor = True, False
    if override is not None:
        enabled = override.enabled and override.mode != "off"
        monitor = override.mode == "monitor"
        if override.priority is not None:
            priority = override.priority
        if override.timeout_ms is not None:
            timeout_ms = override.timeout_ms
        if override.fail_closed is not None:
            fail_closed = override.fail_closed
    return enabled, priority, timeout_ms, fail_closed, monitor


class HookRegistry:
    """An immutable snapshot of every enabled hook, ordered per event by priority, plugin order, definition order."""

    __slots__ = (
        "_agent_plugins",
        "_by_event",
        "_claimed",
        "_filtered_events",
        "_policies",
        "_scoped",
        "_without",
        "background",
        "blocking_threshold_ms",
        "fixed_plugins",
        "generation",
        "isolated",
        "plugin_names",
        "room_policies",
    )

    def __init__(
        self,
        by_event: Mapping[str, tuple[RegisteredHook, ...]],
        *,
        agent_plugins: Mapping[str, frozenset[str]] | None = None,
        plugin_names: tuple[str, ...] = (),
        blocking_threshold_ms: float = DEFAULT_BLOCKING_THRESHOLD_MS,
        generation: RegistryGeneration | None = None,
        background: BackgroundObservers | None = None,
        room_policies: RoomHookPolicies | None = None,
        fixed_plugins: frozenset[str] = frozenset(),
        isolated: IsolatedPlugins | None = None,
    ) -> None:
        self._by_event = MappingProxyType(dict(by_event))
        self._agent_plugins = MappingProxyType(dict(agent_plugins or {}))
        # A plugin an entity lists is that entity's: it runs only where it is listed, never by default elsewhere.
        self._claimed: frozenset[str] = frozenset().union(*self._agent_plugins.values())
        self._filtered_events = frozenset(
            event
            for event, hooks in self._by_event.items()
            if self._agent_plugins or any(h.agents is not None or h.rooms is not None for h in hooks)
        )
        self._scoped: dict[tuple[str, str | None, str | None], tuple[RegisteredHook, ...]] = {}
        self._without: dict[str, HookRegistry] = {}
        self.plugin_names = plugin_names
        # The background queues outlive a registry: a reload hands them on, so shutdown drains them all.
        self.background = background if background is not None else BackgroundObservers()
        # Room state outlives a registry too: a reload keeps what the rooms said.
        self.room_policies = room_policies if room_policies is not None else RoomHookPolicies()
        self._policies = self.room_policies.rooms
        self.fixed_plugins = fixed_plugins
        self.isolated = isolated if isolated is not None else IsolatedPlugins()
        self.blocking_threshold_ms = blocking_threshold_ms
        self.generation = generation if generation is not None else RegistryGeneration()

    @property
    def superseded(self) -> bool:
        """True once `mark_superseded()` was called: a newer registry is live, and `ctx.is_active()` is False."""
        return not self.generation.live

    def mark_superseded(self) -> None:
        """Record that a reload swapped a newer registry in (call it on the old one, after the swap)."""
        self.generation.live = False

    @classmethod
    def empty(cls) -> HookRegistry:
        """A registry with no hooks."""
        return cls({})

    @classmethod
    def from_plugins(
        cls,
        plugins: Iterable[PluginLike],
        *,
        agent_plugins: Mapping[str, Iterable[str]] | None = None,
        previous: HookRegistry | None = None,
        blocking_threshold_ms: float = DEFAULT_BLOCKING_THRESHOLD_MS,
        room_policy_power_level: int | None = None,
        start_workers: bool = True,
    ) -> HookRegistry:
        """Compile plugins into a registry; `previous` lends its telemetry to hooks that still exist.

        `start_workers=False` (a command that only lists or checks the hooks): isolated plugins' workers start
        at their first call instead of now."""
        old_stats = {hook.key: hook.stats for hook in previous.all_hooks()} if previous is not None else {}
        compiled: dict[str, list[RegisteredHook]] = {}
        names: list[str] = []
        fixed: set[str] = set()
        workers = previous.isolated if previous is not None else IsolatedPlugins()
        isolated: set[str] = set()
        for position, plugin in enumerate(plugins):
            name = str(plugin.name)
            names.append(name)
            entry = getattr(plugin, "entry_config", None)
            if entry is not None and entry.room_policy == "fixed":
                fixed.add(name)
            overrides: Mapping[str, HookOverrideConfig] = entry.hooks if entry is not None else {}
            settings: dict[str, Any] = dict(entry.settings) if entry is not None else {}
            plugin_order = int(getattr(plugin, "plugin_order", 0) or 0)
            folder = getattr(plugin, "path", None)
            deps = getattr(plugin, "deps_dir", None)
            worker = (
                workers.worker(name, folder, settings, deps)
                if entry is not None and entry.isolated and folder
                else None
            )
            seen: set[str] = set()
            hooked = False
            for index, callback in enumerate(getattr(plugin, "discovered_hooks", ())):
                meta = get_hook_metadata(callback)
                if meta is None:
                    logger.warning("plugin callback is not a hook", plugin=name, callback=repr(callback))
                    continue
                if meta.hook_name in seen:
                    logger.warning("duplicate hook name ignored", plugin=name, hook=meta.hook_name)
                    continue
                seen.add(meta.hook_name)
                enabled, priority, timeout_ms, fail_closed, monitor = _effective(meta, overrides.get(meta.hook_name))
                if not enabled:
                    continue
                hooked = True
                key = (name, meta.hook_name, meta.event_name)
                compiled.setdefault(meta.event_name, []).append(
                    RegisteredHook(
                        plugin_name=name,
                        hook_name=meta.hook_name,
                        event_name=meta.event_name,
                        callback=callback if worker is None else isolated_callback(worker, meta.hook_name),
                        priority=priority,
                        timeout_ms=timeout_ms,
                        timeout_s=timeout_ms / 1000.0,
                        agents=meta.agents,
                        rooms=meta.rooms,
                        fail_closed=fail_closed,
                        monitor=monitor,
                        settings=settings,
                        plugin_order=plugin_order,
                        order_key=(priority, plugin_order, position, index),
                        logger=get_logger("mindroom.plugins", plugin=name, hook=meta.hook_name),
                        stats=old_stats.get(key) or HookStats(),
                        required=meta.required,
                        background=meta.background,
                    )
                )
            for unknown in sorted(set(overrides) - seen):
                logger.warning("hook override names no hook of this plugin", plugin=name, hook=unknown)
            if worker is not None and hooked:  # a plugin whose hooks are all off gets no process (`keep_only` below)
                isolated.add(name)
                if start_workers:
                    worker.warm()  # the first call does not wait for a process to start
        by_event = {event: tuple(sorted(hooks, key=lambda h: h.order_key)) for event, hooks in compiled.items()}
        allow = {agent: frozenset(plugin_names) for agent, plugin_names in (agent_plugins or {}).items()}
        policies = previous.room_policies if previous is not None else RoomHookPolicies()
        workers.keep_only(isolated)
        if room_policy_power_level is not None:
            policies.set_required_level(room_policy_power_level)
        return cls(
            by_event,
            agent_plugins=allow,
            plugin_names=tuple(names),
            blocking_threshold_ms=blocking_threshold_ms,
            background=previous.background if previous is not None else None,
            room_policies=policies,
            fixed_plugins=frozenset(fixed),
            isolated=workers,
        )

    def hooks_for(self, event_name: str) -> tuple[RegisteredHook, ...]:
        """Every hook of an event, in execution order, before agent/room filtering."""
        return self._by_event.get(event_name, ())

    def has_hooks(self, event_name: str) -> bool:
        """True when at least one hook listens to the event."""
        return event_name in self._by_event

    def matching(self, event_name: str, agent_name: str | None, room_id: str | None) -> tuple[RegisteredHook, ...]:
        """The hooks that fire for this agent and room, in execution order (memoized per scope), less those the
        room's hook policy turns off."""
        hooks = self._by_event.get(event_name, ())
        if not hooks:
            return hooks
        if event_name in self._filtered_events:
            key = (event_name, agent_name, room_id)
            cached = self._scoped.get(key)
            hooks = cached if cached is not None else self._select(hooks, key)
        policy = self._policies.get(room_id)
        return hooks if policy is None else policy.filter(hooks, self.fixed_plugins)

    def _select(
        self, hooks: tuple[RegisteredHook, ...], key: tuple[str, str | None, str | None]
    ) -> tuple[RegisteredHook, ...]:
        _, agent_name, room_id = key
        selected = tuple(
            hook
            for hook in hooks
            if (hook.agents is None or agent_name in hook.agents)
            and (hook.rooms is None or room_id in hook.rooms)
            and self.runs_for(hook.plugin_name, agent_name)
        )
        if len(self._scoped) >= _SCOPED_CACHE_LIMIT:
            self._scoped.clear()
        self._scoped[key] = selected
        return selected

    def runs_for(self, plugin_name: str, agent_name: str | None) -> bool:
        """Whether a plugin's hooks run for this entity: the plugins its `plugins:` lists, or, when it lists none,
        every plugin no entity lists. Events of no entity (`config:reloaded`) run with the router's capabilities,
        so they follow the router's list."""
        allowed = self._agent_plugins.get(agent_name if agent_name is not None else ROUTER_AGENT_NAME)
        if allowed is not None:
            return plugin_name in allowed
        return plugin_name not in self._claimed

    def without_plugin(self, plugin_name: str) -> HookRegistry:
        """This registry minus one plugin's hooks (same telemetry cells); memoized."""
        cached = self._without.get(plugin_name)
        if cached is None:
            by_event = {
                event: kept
                for event, hooks in self._by_event.items()
                if (kept := tuple(hook for hook in hooks if hook.plugin_name != plugin_name))
            }
            cached = HookRegistry(
                by_event,
                agent_plugins=self._agent_plugins,
                plugin_names=tuple(name for name in self.plugin_names if name != plugin_name),
                blocking_threshold_ms=self.blocking_threshold_ms,
                generation=self.generation,
                background=self.background,
                room_policies=self.room_policies,
                fixed_plugins=self.fixed_plugins,
                isolated=self.isolated,
            )
            self._without[plugin_name] = cached
        return cached

    def all_hooks(self) -> list[RegisteredHook]:
        """Every compiled hook, grouped by event in execution order."""
        return [hook for event in sorted(self._by_event) for hook in self._by_event[event]]

    @property
    def events(self) -> tuple[str, ...]:
        """Events with at least one hook."""
        return tuple(sorted(self._by_event))

    def __len__(self) -> int:
        return sum(len(hooks) for hooks in self._by_event.values())

    def __repr__(self) -> str:
        return f"HookRegistry(plugins={list(self.plugin_names)!r}, hooks={len(self)})"
