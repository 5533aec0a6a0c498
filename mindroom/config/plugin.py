"""Plugin entries of `config.yaml`: `PluginEntryConfig(path, settings, hooks)` and per-hook overrides."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["HookMode", "HookOverrideConfig", "PluginEntryConfig", "RoomPolicyMode"]

HookMode = Literal["enforce", "monitor", "off"]
RoomPolicyMode = Literal["room", "fixed"]


class HookOverrideConfig(BaseModel):
    """Per-hook overrides; `None` keeps the decorator's value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    priority: int | None = None
    timeout_ms: int | None = Field(default=None, gt=0)
    fail_closed: bool | None = None
    mode: HookMode = "enforce"


class PluginEntryConfig(BaseModel):
    """One entry of the `plugins:` list: a plugin folder, its settings and per-hook overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    settings: dict[str, Any] = Field(default_factory=dict)
    hooks: dict[str, HookOverrideConfig] = Field(default_factory=dict)
    enabled: bool = True
    room_policy: RoomPolicyMode = "room"
    """`fixed`: rooms' hook policy (`com.mindroom.hooks.policy`) cannot turn this plugin or its hooks off or on."""
    isolated: bool = False
    """`true`: the plugin's hooks run in a worker process of their own (`mindroom.hooks.isolated`)."""
