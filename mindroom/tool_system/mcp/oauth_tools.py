"""The functions an agent gets from an MCP server with `auth`, each acting as the person the turn speaks for.

Three bridge functions always exist (MindRoom's names): `<prefix>_connection_status`, `<prefix>_list_tools`
and `<prefix>_call_tool`; once a session has listed the server's tools, each selected tool is a function
`<prefix>_<tool>` too. Every call first asks for the requester's token (`token_for`): a person without a
connection gets the `!connect <provider>` message (with the link in a direct message), never another
person's session; then it runs over the requester's own session (`personal.PersonalSessions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mindroom.tool_system.builtin.oauth_api import token_for
from mindroom.tool_system.builtin.parts import tool_caller
from mindroom.tool_system.mcp.wire import RemoteTool
from mindroom.tool_system.spec import ToolError, ToolSpec

if TYPE_CHECKING:
    from mindroom.tool_system.mcp.personal import PersonalSessions

__all__ = ["BRIDGE_SUFFIXES", "oauth_tool_specs"]

BRIDGE_SUFFIXES = ("connection_status", "list_tools", "call_tool")
_GRACE_S = 5.0


async def _requester(provider_id: str) -> str:
    """The person the turn speaks for, once their connection is known to exist (else the connect message)."""
    person = tool_caller(room_needed=False).requester_id
    await token_for(person, provider_id)
    return person


def oauth_tool_specs(
    server_id: str,
    prefix: str,
    sessions: PersonalSessions,
    timeout_s: float,
    selected: Callable[[str], bool],
    toolkit: str,
) -> tuple[ToolSpec, ...]:
    """The bridge functions and the typed functions of the selected tools the server listed last."""
    provider = sessions.provider_id

    def spec(name: str, function: Any, description: str, parameters: dict[str, Any]) -> ToolSpec:
        return ToolSpec(
            name=name,
            function=function,
            description=description,
            parameters=parameters,
            toolkit=toolkit,
            timeout_s=timeout_s + sessions.config.startup_timeout_seconds + _GRACE_S,
        )

    async def connection_status() -> str:
        person = await _requester(provider)
        await sessions.session(person)
        return f"Connected to {server_id} ({provider}) with your own account."

    async def list_tools() -> str:
        person = await _requester(provider)
        await sessions.session(person)
        listed = [
            {"name": tool.name, "description": tool.description} for tool in sessions.tools if selected(tool.name)
        ]
        return json.dumps(listed, ensure_ascii=False)

    async def call_tool(tool_name: str, arguments: dict[str, Any] | None = None) -> Any:
        name = (tool_name or "").strip()
        if not name or not selected(name):
            raise ToolError(f"{name!r} is not a tool of MCP server {server_id!r} this agent may call")
        person = await _requester(provider)
        return await sessions.call(person, name, arguments or {}, timeout_s)

    # The server's `description` (what it is for) is said on each bridge function.
    about = f" {sessions.config.description}" if sessions.config.description else ""
    specs = [
        spec(
            f"{prefix}_connection_status",
            connection_status,
            f"Whether your account is connected to MCP server {server_id} (else the link to connect).{about}",
            {"type": "object", "properties": {}},
        ),
        spec(
            f"{prefix}_list_tools",
            list_tools,
            f"The tools of MCP server {server_id}, with your account.{about}",
            {"type": "object", "properties": {}},
        ),
        spec(
            f"{prefix}_call_tool",
            call_tool,
            f"Call a tool of MCP server {server_id} by name, with your account.{about}",
            {
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string", "description": "The tool's name, as list_tools gives it."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["tool_name"],
            },
        ),
    ]
    bridge = {item.name for item in specs}
    for remote in sessions.tools:
        name = f"{prefix}_{remote.name}"
        if selected(remote.name) and name not in bridge:
            specs.append(_typed(remote, name, server_id, provider, sessions, timeout_s, spec))
    return tuple(specs)


def _typed(
    remote: RemoteTool,
    name: str,
    server_id: str,
    provider: str,
    sessions: PersonalSessions,
    timeout_s: float,
    spec: Callable[[str, Any, str, dict[str, Any]], ToolSpec],
) -> ToolSpec:
    async def call(**arguments: Any) -> Any:
        person = await _requester(provider)
        return await sessions.call(person, remote.name, arguments, timeout_s)

    schema = {"type": "object", "properties": {}, **dict(remote.input_schema)}
    return spec(name, call, remote.description or f"{remote.name} (MCP server {server_id})", schema)
