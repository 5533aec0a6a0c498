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


def _servers(*entries: tuple[str, str | None]) -> str:
    lines = ["mcp_servers:"]
    for server_id, provider_id in entries:
        auth = "{type: oauth}" if provider_id is None else f"{{type: oauth, provider_id: {provider_id}}}"
        lines += [f"  {server_id}:", "    transport: streamable-http", f"    url: {URL}", f"    auth: {auth}"]
    return "\n".join(lines) + "\n"


def test_oauth_config_two_servers_never_share_a_provider_and_its_tokens():
    from mindroom.config.loading import parse_config_text
    from mindroom.errors import ConfigError

    with pytest.raises(ConfigError, match=r"mcp_servers\.wiki\.auth: provider id 'mcp_notes'"):
        parse_config_text(_servers(("notes", None), ("wiki", "notes")), "config.yaml", {})
    with pytest.raises(ConfigError, match=r"mcp_servers\.mcp_notes\.auth: provider id 'mcp_notes'"):
        parse_config_text(_servers(("notes", None), ("mcp_notes", None)), "config.yaml", {})
    providers = (
        "oauth_providers:\n  mcp_notes:\n    authorization_url: https://id.example/authorize\n"
        "    token_url: https://id.example/token\n"
    )
    with pytest.raises(ConfigError, match=r"mcp_servers\.notes\.auth: provider id 'mcp_notes' is oauth_providers's"):
        parse_config_text(providers + _servers(("notes", None)), "config.yaml", {})
    # Near misses: ids that differ by a suffix are two providers; a server without auth takes none.
    config = parse_config_text(_servers(("notes", None), ("notes_2", None), ("wiki", "notes_wiki")), "config.yaml", {})
    assert sorted(config.mcp_servers) == ["notes", "notes_2", "wiki"]
    plain = f"  other:\n    transport: streamable-http\n    url: {URL}\n"
    assert "other" in parse_config_text(_servers(("other_x", "other")) + plain, "config.yaml", {}).mcp_servers
