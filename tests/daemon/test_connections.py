"""At start the daemon says which OAuth providers people can connect, and why each other one named cannot be."""

from __future__ import annotations

import json
import os
from pathlib import Path

from structlog.testing import capture_logs

from mindroom.config.oauth import OAuthProviderConfig
from mindroom.daemon.connections import announce_providers
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.service import OAuthConnections
from mindroom.oauth.vault import TokenVault
from mindroom.state.sqlite.connections import SqliteConnectionStore


def _connections(tmp_path: Path, entries: dict[str, OAuthProviderConfig], env: dict[str, str]) -> OAuthConnections:
    vault = TokenVault(SqliteConnectionStore(tmp_path / "connections.db"), Sealer(os.urandom(32)))
    return OAuthConnections(vault, lambda: entries, env, tmp_path)


def test_connections_start_names_the_ready_providers_and_the_problem_of_each_other(tmp_path: Path):
    seeds = [{"service": "github_oauth_client", "credentials": {"client_id": "gh", "client_secret": "gh-secret-x"}}]
    entries = {
        "acme": OAuthProviderConfig(authorization_url="https://a.example/a", token_url="https://a.example/t"),
    }
    service = _connections(tmp_path, entries, {"MINDROOM_CREDENTIAL_SEEDS_JSON": json.dumps(seeds)})

    with capture_logs() as logs:
        announce_providers(service)

    assert [(e["event"], e.get("providers"), e.get("problem")) for e in logs] == [
        ("OAuth provider not usable", None, "oauth_providers.acme: needs client_id and client_secret (in the entry, "
         "or the seed acme_oauth_client)"),
        ("OAuth providers ready", ["github"], None),
    ]  # fmt: skip
    assert "gh-secret-x" not in repr(logs)


def test_connections_start_says_when_the_seeds_cannot_be_read(tmp_path: Path):
    service = _connections(tmp_path, {}, {"MINDROOM_CREDENTIAL_SEEDS_FILE": "missing.json"})

    with capture_logs() as logs:
        announce_providers(service)

    [entry] = logs
    assert entry["event"] == "OAuth providers not usable" and "MINDROOM_CREDENTIAL_SEEDS" in entry["problem"]


def test_connections_start_tells_an_mcp_servers_provider_as_found_on_connect_not_as_a_fault(tmp_path: Path):
    from mindroom.config.mcp import MCPServerConfig
    from mindroom.tool_system.mcp.oauth_providers import MCPOAuthProviders

    server = MCPServerConfig(transport="streamable-http", url="https://notes.example.org/mcp", auth={"type": "oauth"})
    service = _connections(tmp_path, {}, {})
    service.sources.append(MCPOAuthProviders(service, lambda: {"notes": server}))

    with capture_logs() as logs:
        announce_providers(service)

    about = "mcp_servers.notes.auth: its endpoints are found when someone connects"
    assert [(e["event"], e["log_level"], e.get("about")) for e in logs] == [
        ("OAuth provider of an MCP server", "info", about)
    ]
