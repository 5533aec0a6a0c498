"""The one builder of live state: config -> plugins -> tools and skills -> hook registry, for start and reload.

The last-good rule is per plugin. A plugin that fails to load is logged and does not fail the build: on
reload it keeps running as its last good generation (`kept`), and one that never loaded is left out, so
one broken folder under `plugins/` neither keeps the daemon from starting nor freezes config changes.
Agents naming the tools or skills of a plugin that failed get a warning instead of an error.

A config error fails the build whole (`ConfigError`), and so do tools or skills that do not fit
(`ToolCatalogError`, `SkillError`): the caller keeps the last good state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mindroom.ai.tools import foreign_tool_specs
from mindroom.bots.runtime import LiveState
from mindroom.config.loading import load_config
from mindroom.config.overrides import ChatSettings
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
    """What a build produced: the new live state, an error for each plugin that failed to load, and which of
    those run as their last good generation (the others are left out)."""

    live: LiveState
    plugin_errors: tuple[PluginError, ...] = ()
    kept: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


def build_live_state(
    runtime_paths: RuntimePaths, *, previous: LiveState | None, settings: ChatSettings | None = None
) -> LiveBuild:
    """Read the config (with the chat's overrides: `settings`, else `previous`'s), import its plugins afresh,
    and compile tools, skills and the hook registry.

    Raises `ConfigError`, `ToolCatalogError` or `SkillError` when the config and plugins do not fit;
    with `previous`, a plugin that fails keeps its generation from it and hook telemetry carries over.
    An override that no longer fits the file is passed over (`mindroom doctor` and `!config` show it).
    """
    if settings is None:
        settings = previous.settings if previous is not None else ChatSettings()
    config = load_config(runtime_paths.config_path, runtime_paths.env_values, settings.config_overrides(), strict=False)
    loaded = load_plugins(config, runtime_paths, last_good=previous.plugins if previous else ())
    # Names an agent lists may belong to a plugin that failed to load: tolerated only then.
    exact = not loaded.errors
    before = dict(previous.plugin_digests) if previous is not None else {}
    # A kept plugin runs the code it was loaded with: its digest stays, so the fix shows as an update.
    digests = {
        plugin.name: before.get(plugin.name) or plugin_digest(plugin.path)
        if plugin.name in loaded.kept
        else plugin_digest(plugin.path)
        for plugin in loaded.plugins
    }
    registry = build_registry(config, loaded.plugins, previous=previous.registry if previous else None)
    if previous is not None:
        _close_breakers_of_changed_plugins(registry, before, digests)
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
        settings=settings,
    )
    return LiveBuild(live, loaded.errors, loaded.kept, loaded.left_out)


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
