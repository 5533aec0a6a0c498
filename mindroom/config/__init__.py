"""Configuration: `config.yaml` models, loading with `${ENV}` substitution, and environment settings."""

from mindroom.config.loading import load_config, parse_config_text
from mindroom.config.main import (
    AgentConfig,
    AuthorizationConfig,
    Config,
    DefaultsConfig,
    ModelConfig,
    RoomConfig,
    RoomDefaultsConfig,
    RouterConfig,
)
from mindroom.config.plugin import HookOverrideConfig, PluginEntryConfig
from mindroom.config.settings import MindroomSettings, load_settings

__all__ = [
    "AgentConfig",
    "AuthorizationConfig",
    "Config",
    "DefaultsConfig",
    "HookOverrideConfig",
    "MindroomSettings",
    "ModelConfig",
    "PluginEntryConfig",
    "RoomConfig",
    "RoomDefaultsConfig",
    "RouterConfig",
    "load_config",
    "load_settings",
    "parse_config_text",
]
