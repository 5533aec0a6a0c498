"""An MCP server's `auth:` block as the config checks it: remote servers only, one way to give credentials, a
provider id that is always an MCP one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mindroom.config.mcp import MCPServerConfig, mcp_oauth_provider_id

URL = "https://notes.example.org/mcp"


def _server(**fields: Any) -> MCPServerConfig:
    return MCPServerConfig.model_validate({"transport": "streamable-http", "url": URL, **fields})


def test_oauth_config_auth_and_an_authorization_header_are_not_both_given():
    with pytest.raises(ValidationError, match=r"headers\.Authorization and auth both give"):
        _server(headers={"authorization": "Bearer operator"}, auth={"type": "oauth"})
    # A near miss of the header's name is another header.
    assert _server(headers={"X-Authorization": "team"}, auth={"type": "oauth"}).auth is not None


def test_oauth_config_auth_is_for_remote_servers_only():
    with pytest.raises(ValidationError, match=r"auth \(OAuth\) is for remote servers"):
        MCPServerConfig.model_validate({"transport": "stdio", "command": "notes", "auth": {"type": "oauth"}})


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [(None, "mcp_notes"), ("team_notes", "mcp_team_notes"), ("mcp_notes", "mcp_notes"), ("mcpnotes", "mcp_mcpnotes")],
)
def test_oauth_config_the_provider_id_always_starts_mcp(provider_id: str | None, expected: str):
    server = _server(auth={"type": "oauth", "provider_id": provider_id})
    assert server.auth is not None
    assert mcp_oauth_provider_id("notes", server.auth) == expected


@pytest.mark.parametrize("provider_id", ["team-notes", "github ", "mcp_notes/../github"])
def test_oauth_config_a_provider_id_is_letters_digits_and_underscores(provider_id: str):
    with pytest.raises(ValidationError, match="provider_id must be letters, digits and underscores"):
        _server(auth={"type": "oauth", "provider_id": provider_id})


def test_oauth_config_manual_discovery_needs_both_endpoints():
    manual = {"type": "oauth", "discovery": "manual", "authorization_url": f"{URL}/authorize"}
    with pytest.raises(ValidationError, match="discovery: manual needs token_url"):
        _server(auth={**manual, "token_url": " "})  # a blank endpoint is none
    assert _server(auth={**manual, "token_url": f"{URL}/token"}).auth is not None
