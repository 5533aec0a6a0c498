"""The built-in `self_config` tool (MindRoom's name): an agent reads and changes its own configuration.

Reads and changes go through `config_access`: only for an administrator, and only keys chat may set
(`agents.<this agent>.display_name`, `role`, `instructions`, `model`, `thread_mode`, `markdown`,
`num_history_runs`, ...). The other arguments of MindRoom's `update_own_config` (tools, rooms, skills,
knowledge bases, ...) are the operator's: a call giving one is refused whole, naming it.
"""

from __future__ import annotations

from typing import Any, Literal

from mindroom.tool_system.builtin.config_access import (
    ADMIN_REQUIRED,
    apply_changes,
    redacted_yaml,
    settings_port,
)
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["get_own_config", "self_config_tools", "update_own_config"]


async def get_own_config() -> str:
    """Get your current configuration as YAML (secrets hidden); requires an administrator requester."""
    port, caller = settings_port()
    if not port.administrator(caller):
        return ADMIN_REQUIRED
    agent = caller.config.agents.get(caller.agent_name) if caller.config is not None else None
    if agent is None:
        return f"Error: Agent '{caller.agent_name}' not found in configuration."
    shown = redacted_yaml(agent.model_dump(mode="json", exclude_defaults=True))
    return f"## Configuration for '{caller.agent_name}':\n\n```yaml\n{shown}\n```"


async def update_own_config(
    display_name: str | None = None,
    role: str | None = None,
    instructions: list[str] | None = None,
    tools: list[str] | None = None,
    model: str | None = None,
    rooms: list[str] | None = None,
    markdown: bool | None = None,
    knowledge_bases: list[str] | None = None,
    skills: list[str] | None = None,
    include_default_tools: bool | None = None,
    show_tool_calls: bool | None = None,
    thread_mode: Literal["thread", "room"] | None = None,
    num_history_runs: int | None = None,
    num_history_messages: int | None = None,
    max_tool_calls_from_history: int | None = None,
    context_files: list[str] | None = None,
) -> str:
    """Update your own configuration; only the fields given change. Requires an administrator requester.

    Chat may change behaviour only (display name, role, instructions, model, thread mode, Markdown, history);
    tools, rooms, skills, knowledge bases and files are the operator's, in config.yaml.

    Args:
        display_name: Human-readable display name.
        role: Description of your purpose.
        instructions: List of instructions.
        tools: Tool names (the operator's: refused from chat).
        model: Model name to use (one of the configured models).
        rooms: Rooms to join (the operator's: refused from chat).
        markdown: Whether to use Markdown formatting.
        knowledge_bases: Knowledge base IDs (the operator's: refused from chat).
        skills: Skill names (the operator's: refused from chat).
        include_default_tools: Whether to merge defaults.tools (the operator's: refused from chat).
        show_tool_calls: Show tool calls inline in responses.
        thread_mode: "thread" or "room".
        num_history_runs: Number of prior runs included as history.
        num_history_messages: Max messages from history.
        max_tool_calls_from_history: Max tool call messages replayed from history.
        context_files: Workspace files loaded into each run (the operator's: refused from chat).
    """
    port, caller = settings_port()
    given: dict[str, Any] = {
        "display_name": display_name,
        "role": role,
        "instructions": instructions,
        "tools": tools,
        "model": model,
        "rooms": rooms,
        "markdown": markdown,
        "knowledge_bases": knowledge_bases,
        "skills": skills,
        "include_default_tools": include_default_tools,
        "show_tool_calls": show_tool_calls,
        "thread_mode": thread_mode,
        "num_history_runs": num_history_runs,
        "num_history_messages": num_history_messages,
        "max_tool_calls_from_history": max_tool_calls_from_history,
        "context_files": context_files,
    }
    changes = [(f"agents.{caller.agent_name}.{key}", value) for key, value in given.items() if value is not None]
    if not changes:
        return "No changes made: no field was given."
    return await apply_changes(port, caller, changes)


def self_config_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `self_config` group: `get_own_config` and `update_own_config`."""
    return (
        ToolSpec(name="get_own_config", function=get_own_config),
        ToolSpec(name="update_own_config", function=update_own_config),
    )
