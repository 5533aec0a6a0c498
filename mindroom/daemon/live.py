"""The one builder of live state: config -> plugins -> tools and skills -> hook registry, for start and reload.

Start and reload differ in one policy, named by `strict`:

- at start (`strict=False`) a plugin that fails to load is logged and left out, so one broken plugin
  does not keep the daemon from running; agents naming its tools or skills get a warning;
- on reload (`strict=True`) any plugin error fails the build, and the caller keeps the last good state.

A config error fails the build either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mindroom.ai.tools import foreign_tool_specs
from mindroom.bots.runtime import LiveState
from mindroom.config.loading import load_config
from mindroom.constants import RuntimePaths
from mindroom.errors import PluginError
from mindroom.hooks.registry import HookRegistry
from mindroom.logging_config import get_logger
from mindroom.plugins.discovery import build_registry, load_plugins, plugin_digest
from mindroom.plugins.skills import build_skill_catalog
from mindroom.tool_system.catalog import build_tool_catalog

__all__ = ["LiveBuild", "build_live_state"]

logger = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LiveBuild:
    """What a build produced: the new live state (None when a strict build failed), and the plugin errors."""

    live: LiveState | None
    plugin_errors: tuple[PluginError, ...] = ()


def build_live_state(runtime_paths: RuntimePaths, *, previous: LiveState | None, strict: bool) -> LiveBuild:
    """Read the config, import its plugins afresh, and compile tools, skills and the hook registry.

    Raises `ConfigError`, `ToolCatalogError` or `SkillError` when the config and plugins do not fit;
    with `previous`, hook telemetry carries over into the new registry.
    """
    config = load_config(runtime_paths.config_path, runtime_paths.env_values)
    loaded = load_plugins(config, runtime_paths)
    if loaded.errors and strict:
        return LiveBuild(None, loaded.errors)
    # Names an agent lists may belong to a plugin that failed to load: tolerated only then.
    exact = strict or not loaded.errors
    digests = {plugin.name: plugin_digest(plugin.path) for plugin in loaded.plugins}
    registry = build_registry(config, loaded.plugins, previous=previous.registry if previous else None)
    if previous is not None:
        _close_breakers_of_changed_plugins(registry, previous.plugin_digests, digests)
    live = LiveState(
        config=config,
        registry=registry,
        plugins=loaded.plugins,
        tools=build_tool_catalog(
            config, loaded.plugins, adapt=foreign_tool_specs, strict=exact, runtime_paths=runtime_paths
        ),
        skills=build_skill_catalog(config, loaded.plugins, strict=exact),
        plugin_digests=digests,
        plugin_errors=loaded.errors,
    )
    return LiveBuild(live, loaded.errors)


def _close_breakers_of_changed_plugins(
    registry: HookRegistry, before: Mapping[str, str], after: Mapping[str, str]
) -> None:
    """A plugin whose code changed gets a fresh chance: its fix takes effect at once, not after the cooldown.

    Counters carry over (telemetry stays continuous); only the breakers of that plugin's hooks close.
    """
    changed = {name for name, digest in after.items() if before.get(name) != digest}
    for hook in registry.all_hooks():
        if hook.plugin_name not in changed:
            continue
        breaker = hook.stats.breaker
        if breaker.open_until:
            logger.info("circuit breaker closed for a changed plugin", plugin=hook.plugin_name, hook=hook.hook_name)
        breaker.reset()
