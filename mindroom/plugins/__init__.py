"""Plugins: manifests, importing plugin folders, and discovering which plugins a config runs."""

from mindroom.hooks.state import plugin_state_dir, validate_plugin_name
from mindroom.plugins.discovery import LoadedPlugins, build_registry, load_plugins, plugin_folders
from mindroom.plugins.loader import Plugin, load_plugin_dir
from mindroom.plugins.manifest import PluginManifest, read_manifest

__all__ = [
    "LoadedPlugins",
    "Plugin",
    "PluginManifest",
    "build_registry",
    "load_plugin_dir",
    "load_plugins",
    "plugin_folders",
    "plugin_state_dir",
    "read_manifest",
    "validate_plugin_name",
]
