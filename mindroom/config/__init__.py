"""Configuration: `config.yaml` models, loading with `${ENV}`, and the one reader of the environment."""

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

__all__ = [
    "AgentConfig",
    "AuthorizationConfig",
    "Config",
    "DefaultsConfig",
    "HookOverrideConfig",
    "ModelConfig",
    "PluginEntryConfig",
    "RoomConfig",
    "RoomDefaultsConfig",
    "RouterConfig",
    "load_config",
    "parse_config_text",
]
