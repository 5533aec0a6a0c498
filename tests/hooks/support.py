"""Stand-in plugins for tests of the hook host: what `HookRegistry.from_plugins` reads, and nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import HookRegistry


def stub_plugin(
    name: str,
    callbacks: Iterable[Callable[..., Any]],
    *,
    plugin_order: int = 0,
    settings: Mapping[str, Any] | None = None,
    hooks: Mapping[str, Any] | None = None,
) -> Any:
    """A loaded plugin named `name` whose discovered hooks are `callbacks`, with its config entry."""
    entry = PluginEntryConfig(path=f"./plugins/{name}", settings=dict(settings or {}), hooks=dict(hooks or {}))
    attributes = {
        "name": name,
        "discovered_hooks": tuple(callbacks),
        "entry_config": entry,
        "plugin_order": plugin_order,
    }
    return type("PluginStub", (), attributes)()


def registry_of(*callbacks: Callable[..., Any], **kwargs: Any) -> HookRegistry:
    """A registry of one stand-in plugin `p` holding `callbacks` (`kwargs` go to `stub_plugin`)."""
    return HookRegistry.from_plugins([stub_plugin("p", callbacks, **kwargs)])
