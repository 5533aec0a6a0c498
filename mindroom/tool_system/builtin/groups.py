"""The built-in tools that reach the daemon's parts, as catalogue groups under MindRoom's names.

`mindroom.tool_system.builtin_groups` registers these with the other built-in groups. Only the names live
here: a group's module is imported when an agent whose `tools:` list names it first has its tools built, so
a daemon whose agents use none of them never loads them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from mindroom.config.environment import secret_value
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["DAEMON_PART_GROUPS", "GROUP_FUNCTIONS", "GROUP_NEEDS", "missing_needs"]

GROUP_FUNCTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "scheduler": ("scheduler", ("schedule", "edit_schedule", "list_schedules", "cancel_schedule")),
    "website": ("website", ("read_url",)),
    "delegate": ("delegate", ("run_subagent", "continue_subagent")),
    "memory": (
        "memory",
        ("add_memory", "search_memories", "list_memories", "get_memory", "update_memory", "delete_memory"),
    ),
    "todo": ("todo", ("plan", "add_todo", "list_todos", "update_todo", "apply_template", "list_templates")),
    "matrix_message": ("matrix_message", ("matrix_message",)),
    "matrix_room": ("matrix_room", ("matrix_room",)),
    "matrix_api": ("matrix_api", ("matrix_api",)),
    "matrix_voice_message": ("matrix_voice_message", ("matrix_voice_message",)),
    "compact_context": ("compact_context", ("compact_context",)),
    "dynamic_tools": ("dynamic_tools", ("tool_search", "call_tool")),
    "stop_reply": ("stop_reply", ("stop_agent_reply",)),
    "skill_manage": ("skill_manage", ("skill_manage",)),
    "config_manager": ("config_manager", ("get_info", "manage_config", "manage_agent", "manage_team")),
    "self_config": ("self_config", ("get_own_config", "update_own_config")),
    "usage_stats": ("usage_stats", ("get_my_usage", "get_all_usage")),
    "thread_tags": ("thread_tags", ("list_thread_tags", "tag_thread", "untag_thread")),
    "thread_resolution": ("thread_tags", ("resolve_thread", "reopen_thread")),
    "thread_summary": ("thread_summary", ("set_thread_summary", "get_thread_summary")),
    "thread_model": (
        "thread_model",
        ("list_models", "get_thread_model", "switch_thread_model", "reset_thread_model"),
    ),
    "thread_move": ("thread_move", ("move_thread",)),
    "homeassistant": ("homeassistant", ("list_entities", "get_entity_state", "call_service")),
    "oauth_api": ("oauth_api", ("oauth_api_request",)),
}
"""Group name -> (its module under `mindroom.tool_system.builtin`, the function names it gives)."""

GROUP_NEEDS: dict[str, tuple[str, ...]] = {"homeassistant": ("HOMEASSISTANT_URL", "HOMEASSISTANT_TOKEN")}
"""Group name -> the variables it cannot run without; the agent runs without the group until they are set."""
_SETTABLE = frozenset({"HOMEASSISTANT_URL"})  # the others are credentials: environment (or `<VAR>_FILE`) only


def missing_needs(group: str, overrides: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, ...]:
    """The variables `group` needs that neither the agent's tool entry (where allowed) nor `env` sets."""
    return tuple(
        name
        for name in GROUP_NEEDS.get(group, ())
        if not (name in _SETTABLE and overrides.get(name)) and secret_value(env, name) is None
    )


def _lazy(module: str, group: str) -> Callable[[AgentToolEnvironment], tuple[ToolSpec, ...]]:
    """The group's builder, `<module>.<group>_tools` (`dynamic_tools` for that group), imported at first build."""
    attribute = group if group == "dynamic_tools" else f"{group}_tools"

    def build(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The group's tools for one agent."""
        builder = getattr(importlib.import_module(f"mindroom.tool_system.builtin.{module}"), attribute)
        return tuple(builder(env))

    return build


DAEMON_PART_GROUPS: tuple[ToolProvider, ...] = tuple(
    ToolProvider(group, "built-in group", names, _lazy(module, group))
    for group, (module, names) in GROUP_FUNCTIONS.items()
)
"""The groups, in the order `mindroom tools list` shows them."""
