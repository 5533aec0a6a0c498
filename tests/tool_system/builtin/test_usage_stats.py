"""The `usage_stats` tool's settings: `admin_scope` per agent only, a boolean, and nothing else; a near miss is
named, never taken as the setting."""

from __future__ import annotations

from typing import Any

from mindroom.config.main import Config
from mindroom.tool_system.builtin.usage_stats import admin_scope, settings_problems


def _config(entry: Any, defaults: list[Any] | None = None) -> Config:
    raw: dict[str, Any] = {"agents": {"a": {"display_name": "A", "tools": [entry]}, "b": {"display_name": "B"}}}
    if defaults is not None:
        raw["defaults"] = {"tools": defaults}
    return Config.model_validate(raw)


def test_usage_stats_admin_scope_is_the_agents_own_setting():
    config = _config({"usage_stats": {"admin_scope": True}})

    assert admin_scope(config, "a") is True
    assert admin_scope(config, "b") is False
    assert admin_scope(_config("usage_stats"), "a") is False
    assert admin_scope(_config({"usage_stats": {"admin_scope": False}}), "a") is False


def test_usage_stats_admin_scope_in_defaults_is_refused_for_every_agent():
    config = _config("usage_stats", defaults=[{"usage_stats": {"admin_scope": True}}])

    assert admin_scope(config, "a") is False and admin_scope(config, "b") is False
    assert settings_problems(config, "b") == [
        "defaults.tools: 'usage_stats': admin_scope is taken per agent only (agents.<name>.tools)"
    ]


def test_usage_stats_a_near_miss_or_a_wrong_type_is_named_and_grants_nothing():
    near = _config({"usage_stats": {"admin_scope": True, "admin_scopes": True}})
    typed = _config({"usage_stats": {"admin_scope": "yes"}})

    assert admin_scope(near, "a") is False and admin_scope(typed, "a") is False
    assert settings_problems(near, "a") == [
        "agents.a.tools: 'usage_stats': setting 'admin_scopes' is not a setting of this tool (allowed: admin_scope)"
    ]
    assert settings_problems(typed, "a") == [
        "agents.a.tools: 'usage_stats': setting 'admin_scope' must be true or false"
    ]
