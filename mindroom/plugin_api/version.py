"""The plugin API version this daemon provides, and how a manifest's `api_version` is compared with it."""

from mindroom.plugins.api_version import PLUGIN_API_VERSION, api_version_key, supports_api_version

__all__ = ["PLUGIN_API_VERSION", "api_version_key", "supports_api_version"]
