"""The built-in `config_manager` tool (MindRoom's name): read and change the configuration from a conversation.

All of it goes through `config_access`: for administrators only (the person the turn speaks for), and a change
sets only keys the chat allowlist lists, as `!config set` would, kept as a setting from chat. What chat may not
do, the tool may not do: it adds no agent or team, and changes no tools, rooms, endpoints, plugins or
credentials. Reads are redacted as `!config show` is.
"""

from __future__ import annotations

from typing import Any, Literal

from mindroom.config.chat_settable import CHAT_SETTABLE
from mindroom.errors import ConfigError
from mindroom.tool_system.builtin.config_access import (
    ADMIN_REQUIRED,
    NOT_APPLIED,
    apply_changes,
    pointer_path,
    redacted_yaml,
    settings_port,
)
from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = [
    "config_manager_tools",
    "get_info",
    "manage_agent",
    "manage_config",
    "manage_team",
]

_INFO_TYPES = (
    "mindroom_docs",
    "config_schema",
    "available_models",
    "agents",
    "teams",
    "available_tools",
    "tool_details",
    "agent_config",
)
_SETTABLE = "\n".join(f"- `{pattern}`" for pattern in CHAT_SETTABLE)


def _info(info_type: str, name: str | None, agent_scope: str) -> str:
    caller = tool_caller(room_needed=False)
    config = caller.config
    if info_type == "mindroom_docs":
        return (
            "This daemon runs MindRoom-style agents in Matrix rooms, configured in config.yaml by the operator. "
            "From a conversation, an administrator may change these keys (as with `!config set`):\n" + _SETTABLE
        )
    if info_type == "config_schema":
        return "Keys a conversation may change (a `*` names an existing agent, team or room):\n" + _SETTABLE
    if info_type == "available_models":
        return "\n".join(f"- `{key}`: {model.provider} {model.id}" for key, model in config.models.items())
    if info_type == "agents":
        names = config.agents
        if agent_scope != "all" and caller.room_id:
            rooms = daemon_parts().rooms
            here = set(rooms.agents_in_room(caller.room_id)) if rooms is not None else set(names)
            names = {key: agent for key, agent in names.items() if key in here}
        return "\n".join(f"- `{key}` ({agent.display_name}): {agent.role}" for key, agent in names.items()) or "none"
    if info_type == "teams":
        return (
            "\n".join(f"- `{key}` ({t.display_name}): {', '.join(t.agents)}" for key, t in config.teams.items())
            or "none"
        )
    lookup = daemon_parts().tools
    known = lookup.names() if lookup is not None else {}
    if info_type == "available_tools":
        return "Tools known here: " + ", ".join(sorted(known))
    if info_type == "tool_details":
        if not name or name not in known:
            return f"Error: unknown tool {name!r}; get_info('available_tools') lists them"
        functions = known[name]
        return f"`{name}`: " + (", ".join(functions) if functions else "its functions are known once it is built")
    return f"Error: Unknown info_type '{info_type}'. Valid options: {', '.join(_INFO_TYPES)}"


async def get_info(
    info_type: str, name: str | None = None, agent_scope: Literal["current_room", "all"] = "current_room"
) -> str:
    """Get information about this daemon's agents, teams, models, tools and configuration.

    Args:
        info_type: One of "mindroom_docs", "config_schema", "available_models", "agents", "teams",
            "available_tools", "tool_details" (needs name) or "agent_config" (needs name; administrators only).
        name: The tool or agent name, for tool_details and agent_config.
        agent_scope: For agents: "current_room" (default) or "all".
    """
    if info_type != "agent_config":
        return _info(info_type, name, agent_scope)
    port, caller = settings_port()
    if not port.administrator(caller):
        return ADMIN_REQUIRED
    agent = caller.config.agents.get(name or "")
    if agent is None:
        return f"Error: Agent '{name}' not found in configuration."
    return f"```yaml\n{redacted_yaml(agent.model_dump(mode='json', exclude_defaults=True))}\n```"


async def manage_config(
    operation: Literal["inspect", "patch"],
    path: str = "",
    changes: list[dict[str, Any]] | None = None,
    dry_run: bool = False,
) -> str:
    """Inspect the configuration in force, or change keys a conversation may change. Administrators only.

    Args:
        operation: "inspect" to read one subtree, or "patch" to change keys.
        path: For inspect: a JSON Pointer ("/agents/helper") or dot path ("agents.helper"); empty for all.
        changes: For patch: entries {"op": "replace" or "add", "path": "/agents/helper/model", "value": ...}.
        dry_run: For patch: check the changes without applying them.
    """
    port, caller = settings_port()
    if operation == "inspect":
        if not port.administrator(caller):
            return ADMIN_REQUIRED
        try:
            effective = await port.effective()
        except ConfigError as error:
            return f"Error: config.yaml does not load as it is now: {error}"
        values = effective.under(pointer_path(path))
        if not values:
            return f"Error: no config key at or below {path!r}."
        return (
            "```yaml\n"
            + redacted_yaml({v.path: v.value for v in values if v.source != "default"} or "defaults only")
            + "\n```"
        )
    if operation != "patch":
        return "Error: Unknown operation. Use 'inspect' or 'patch'."
    parsed: list[tuple[str, Any]] = []
    for change in changes or []:
        op = str(change.get("op", "replace"))
        if op == "remove":
            why = "a conversation never removes config.yaml's keys (`!config reset <path>` undoes a change)"
            return f"Error: {why}.\n\n{NOT_APPLIED}"
        if op not in ("replace", "add") or "path" not in change or "value" not in change:
            return f"Error: each change needs op (replace or add), path and value.\n\n{NOT_APPLIED}"
        parsed.append((pointer_path(str(change["path"])), change["value"]))
    return await apply_changes(port, caller, parsed, dry_run=dry_run)


async def manage_agent(
    operation: Literal["create", "update", "validate"],
    agent_name: str,
    display_name: str | None = None,
    role: str | None = None,
    tools: list[str] | None = None,
    instructions: list[str] | None = None,
    model: str | None = None,
    rooms: list[str] | None = None,
    knowledge_bases: list[str] | None = None,
    include_default_tools: bool | None = None,
    markdown: bool | None = None,
) -> str:
    """Update or validate an agent's configuration (creating agents is the operator's). Administrators only.

    Args:
        operation: "update" or "validate" ("create" is refused: agents are added in config.yaml).
        agent_name: The agent's name in the configuration.
        display_name: Human-readable display name.
        role: Description of the agent's purpose.
        tools: Tool names (the operator's: refused from chat).
        instructions: List of instructions.
        model: Model name (one of the configured models).
        rooms: Rooms (the operator's: refused from chat).
        knowledge_bases: Knowledge base IDs (the operator's: refused from chat).
        include_default_tools: Whether to merge defaults.tools (the operator's: refused from chat).
        markdown: Whether to use Markdown formatting.
    """
    port, caller = settings_port()
    if operation == "create":
        return f"Error: a conversation never adds an agent; the operator adds it in config.yaml.\n\n{NOT_APPLIED}"
    if agent_name not in caller.config.agents:
        return f"Error: Agent '{agent_name}' not found in configuration."
    if operation == "validate":
        return f"Agent '{agent_name}' is valid in the configuration in force."
    given = {
        "display_name": display_name,
        "role": role,
        "tools": tools,
        "instructions": instructions,
        "model": model,
        "rooms": rooms,
        "knowledge_bases": knowledge_bases,
        "include_default_tools": include_default_tools,
        "markdown": markdown,
    }
    changes = [(f"agents.{agent_name}.{key}", value) for key, value in given.items() if value is not None]
    return await apply_changes(port, caller, changes)


async def manage_team(team_name: str, display_name: str, role: str, agents: list[str], mode: str = "coordinate") -> str:
    """Change an existing team's display name, role or mode (adding teams and members is the operator's).

    Args:
        team_name: The team's name in the configuration.
        display_name: Human-readable display name.
        role: Description of the team's purpose.
        agents: The team's members (must be the members it has: changing them is the operator's).
        mode: "coordinate" or "collaborate".
    """
    port, caller = settings_port()
    team = caller.config.teams.get(team_name)
    if team is None:
        return (
            f"Error: a conversation never adds a team; the operator adds '{team_name}' in config.yaml.\n\n{NOT_APPLIED}"
        )
    if list(agents) != list(team.agents):
        return f"Error: a team's members are the operator's (config.yaml).\n\n{NOT_APPLIED}"
    wanted = {"display_name": display_name, "role": role, "mode": mode}
    changes = [(f"teams.{team_name}.{key}", value) for key, value in wanted.items() if getattr(team, key) != value]
    if not changes:
        return "No changes made: the team already has these values."
    return await apply_changes(port, caller, changes)


def config_manager_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `config_manager` group: `get_info`, `manage_config`, `manage_agent`, `manage_team`."""
    functions = (get_info, manage_config, manage_agent, manage_team)
    return tuple(ToolSpec(name=function.__name__, function=function) for function in functions)
