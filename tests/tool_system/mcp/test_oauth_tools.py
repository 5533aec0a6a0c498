"""The functions an MCP server with `auth` gives an agent, before anyone connected: the three bridge functions."""

from __future__ import annotations

import pytest

from mindroom.config.mcp import MCPServerConfig
from mindroom.tool_system.mcp.connection import MCP_RETRY
from mindroom.tool_system.mcp.oauth_tools import oauth_tool_specs
from mindroom.tool_system.mcp.personal import PersonalSessions


async def _never(person: str) -> str:
    raise AssertionError("no token is asked for while the functions are listed")


def _specs(description: str | None) -> dict[str, str]:
    entry: dict[str, object] = {"transport": "streamable-http", "url": "https://notes.example.org/mcp"}
    entry["auth"] = {"type": "oauth"}
    if description is not None:
        entry["description"] = description
    server = MCPServerConfig.model_validate(entry)
    sessions = PersonalSessions("notes", server, "mcp_notes", _never, retry=MCP_RETRY, on_tools=lambda: None)
    specs = oauth_tool_specs("notes", "notes", sessions, 30.0, lambda name: True, "mcp_notes")
    return {spec.name: spec.description or "" for spec in specs}


@pytest.mark.parametrize("description", [None, "The team's meeting notes."])
def test_oauth_tools_each_bridge_function_says_what_the_server_is_for(description: str | None):
    about = f" {description}" if description else ""

    assert _specs(description) == {
        "notes_connection_status": "Whether your account is connected to MCP server notes (else the link to connect)."
        + about,
        "notes_list_tools": f"The tools of MCP server notes, with your account.{about}",
        "notes_call_tool": f"Call a tool of MCP server notes by name, with your account.{about}",
    }
