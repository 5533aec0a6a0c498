"""MCP servers with `auth`: a real MCP server with OAuth on loopback (the MCP SDK's authorization server, resource
metadata and bearer middleware), found by discovery, the daemon registered as its client, people connecting their
own accounts, and each tool call made over the caller's own session with their own token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from mindroom.backoff import Backoff
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.service import OAuthConnections, provide_connections
from mindroom.oauth.vault import TokenVault
from mindroom.state.sqlite.connections import SqliteConnectionStore
from mindroom.tool_system.builtin.oauth_api import ConnectionNeededError
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.mcp.oauth_providers import MCPOAuthProviders
from mindroom.tool_system.mcp.servers import MCPServerPool
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from tests.oauth.auth_server import loopback_auth_server
from tests.oauth.support import approve
from tests.tool_system.mcp.oauth_server import LoopbackMCPAuthServer, loopback_mcp_auth_server

pytestmark = pytest.mark.asyncio

ALICE, BOB = "@alice:hs", "@bob:hs"
BASE = "https://bot.example.org"
RELAXED = {"MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY": "1", "MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY": "1"}
FAST = Backoff(first_s=0.2, max_s=0.5)


@pytest.fixture
def server() -> Iterator[LoopbackMCPAuthServer]:
    with loopback_mcp_auth_server() as running:
        yield running


def notes_config(url: str, **auth: object) -> Config:
    return Config.model_validate(
        {
            "mcp_servers": {
                "notes": {
                    "transport": "streamable-http",
                    "url": url,
                    "allow_private_network": True,
                    "auth": {"type": "oauth", **auth},
                }
            },
            "agents": {"helper": {"display_name": "Helper", "tools": ["mcp_notes"]}},
        }
    )


def make_connections(tmp_path: Path, config: Config, env: dict[str, str]) -> OAuthConnections:
    """Connections over the state in `tmp_path` (made again, they are the same daemon after a restart)."""
    vault = TokenVault(SqliteConnectionStore(tmp_path / "state" / "connections.db"), Sealer(bytes(range(32))))
    connections = OAuthConnections(vault, dict, {"MINDROOM_PUBLIC_URL": BASE, **env}, tmp_path)
    connections.sources.append(MCPOAuthProviders(connections, lambda: config.mcp_servers))
    return connections


@pytest_asyncio.fixture
async def setup(
    tmp_path: Path, server: LoopbackMCPAuthServer
) -> AsyncIterator[tuple[Config, OAuthConnections, MCPServerPool]]:
    config = notes_config(server.url)
    connections = make_connections(tmp_path, config, RELAXED)
    withdraw = provide_connections(tmp_path / "data", connections)
    pool = MCPServerPool(RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {}), retry=FAST)
    await pool.apply(config)
    yield config, connections, pool
    await pool.close()
    withdraw()


def turn(tmp_path: Path, requester: str):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    return bind_runtime_context(
        ToolRuntimeContext(runtime_paths=paths, agent_name="helper", room_id="!dm:hs", requester_id=requester)
    )


def specs(pool: MCPServerPool, config: Config, tmp_path: Path) -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in pool.tool_specs(config, "notes", AgentToolEnvironment("helper", tmp_path))}


async def whoami(pool: MCPServerPool, config: Config, tmp_path: Path) -> str:
    return await specs(pool, config, tmp_path)["notes_call_tool"].function(tool_name="whoami")


async def connect(connections: OAuthConnections, server: LoopbackMCPAuthServer, person: str, account: str) -> None:
    await connections.prepare("mcp_notes")
    link = connections.connect_link(person, "mcp_notes")
    authorization, secret = connections.authorize("mcp_notes", link.rsplit("=", 1)[1])
    _, code, state = await server.approve(authorization, account)
    await connections.complete("mcp_notes", state, code, secret)


class _DirectMessage:
    """The room's members as the agent's account reads them: the person and the agent (a direct message)."""

    def __init__(self, person: str) -> None:
        self.person = person

    def client(self, agent: str) -> _DirectMessage:
        return self

    async def room_members(self, room_id: str) -> list[str]:
        return ["@helper:hs", self.person]

    def user_ids(self) -> dict[str, str]:
        return {"helper": "@helper:hs"}


async def test_mcp_oauth_server_is_not_called_before_anyone_connects(tmp_path, server, setup):
    config, _, pool = setup

    names = sorted(specs(pool, config, tmp_path))

    assert names == ["notes_call_tool", "notes_connection_status", "notes_list_tools"]
    assert server.calls == [] and server.provider.clients == {}
    assert {status.server_id: status.state for status in pool.statuses()} == {"notes": "ready"}


async def test_mcp_oauth_discovers_registers_once_and_calls_with_each_persons_own_token(tmp_path, server, setup):
    config, connections, pool = setup
    with capture_logs() as logs:
        await connect(connections, server, ALICE, "alice")
        with turn(tmp_path, ALICE):
            answer = await specs(pool, config, tmp_path)["notes_call_tool"].function(tool_name="whoami")
        # The session listed the server's tools: the typed function is there now.
        with turn(tmp_path, ALICE):
            typed = await specs(pool, config, tmp_path)["notes_whoami"].function()

    assert answer == "you are alice" and typed == "you are alice"
    (client_id,) = server.provider.clients
    kept = connections.vault.load_client("mcp_notes")
    assert kept is not None and kept["client_id"] == client_id
    assert kept["redirect_uri"] == f"{BASE}/api/oauth/mcp_notes/callback"
    tokens = connections.vault.load(ALICE, "mcp_notes")
    assert tokens is not None and tokens.access_token in server.provider.tokens
    secrets = [tokens.access_token, tokens.refresh_token, server.provider.clients[client_id].client_secret]
    assert not [entry for entry in logs for secret in secrets if secret and secret in repr(entry)]

    await connect(connections, server, BOB, "bob")
    with turn(tmp_path, BOB):
        bob = await specs(pool, config, tmp_path)["notes_whoami"].function()

    assert bob == "you are bob"
    assert len(server.provider.clients) == 1  # registered once, kept
    assert pool.personal("notes").people() == [ALICE, BOB]


async def test_mcp_oauth_a_person_without_a_connection_gets_the_connect_link_not_anothers_session(
    tmp_path, server, setup
):
    config, connections, pool = setup
    await connect(connections, server, ALICE, "alice")
    with turn(tmp_path, ALICE):
        await whoami(pool, config, tmp_path)
    withdraw = provide_daemon_parts(tmp_path / "data", DaemonParts(rooms=_DirectMessage(BOB)))

    try:
        with turn(tmp_path, BOB), pytest.raises(ConnectionNeededError) as refused:
            await whoami(pool, config, tmp_path)
    finally:
        withdraw()

    assert f"{BASE}/api/oauth/mcp_notes/authorize?link=" in str(refused.value)
    assert server.calls == [("whoami", "alice")]
    assert pool.personal("notes").people() == [ALICE]


async def test_mcp_oauth_disconnect_closes_the_persons_session(tmp_path, server, setup):
    config, connections, pool = setup
    await connect(connections, server, ALICE, "alice")
    with turn(tmp_path, ALICE):
        await whoami(pool, config, tmp_path)
    assert pool.personal("notes").people() == [ALICE]

    answer = await connections.disconnect(ALICE, "mcp_notes")

    assert answer.startswith("Disconnected mcp_notes")
    assert pool.personal("notes").people() == []
    with turn(tmp_path, ALICE), pytest.raises(ConnectionNeededError):
        await whoami(pool, config, tmp_path)


async def test_mcp_oauth_an_idle_session_is_closed_at_the_next_call(tmp_path, server, setup):
    config, connections, pool = setup
    await connect(connections, server, ALICE, "alice")
    await connect(connections, server, BOB, "bob")
    sessions = pool.personal("notes")
    with turn(tmp_path, ALICE):
        await whoami(pool, config, tmp_path)
    sessions.idle_s = 0.0
    await asyncio.sleep(0.01)  # a clock tick, so that Alice's session is past an idle time of zero

    with turn(tmp_path, BOB):
        await whoami(pool, config, tmp_path)

    assert sessions.people() == [BOB]


@pytest.mark.parametrize(
    ("url", "env", "refusal"),
    [
        ("http://127.0.0.1:{port}/mcp", {}, "not HTTPS"),
        ("http://127.0.0.1:{port}/mcp", {"MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY": "1"}, "private address"),
        ("https://10.0.0.7/mcp", {"MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY": "1"}, "private address 10.0.0.7"),
        ("https://192.168.1.5/mcp", {}, "MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY is off"),
        ("https://169.254.169.254/mcp", RELAXED, "never reached"),
        ("https://localhost.evil.example/mcp", RELAXED, "cannot resolve localhost.evil.example"),
    ],
)
async def test_mcp_oauth_discovery_goes_to_public_https_hosts_only_unless_relaxed(tmp_path, server, url, env, refusal):
    config = notes_config(url.format(port=server.base.rsplit(":", 1)[1]))
    connections = make_connections(tmp_path, config, env)

    with pytest.raises(OAuthError, match=refusal) as refused:
        await connections.prepare("mcp_notes")

    assert "mcp_servers.notes.auth" in str(refused.value)
    assert server.provider.clients == {}


async def test_mcp_oauth_the_registered_client_is_kept_sealed_and_used_after_a_restart(tmp_path, server, setup):
    config, connections, _ = setup
    await connections.prepare("mcp_notes")
    (client_id,) = server.provider.clients
    raw = (tmp_path / "state" / "connections.db").read_bytes()

    again = make_connections(tmp_path, config, RELAXED)
    await again.prepare("mcp_notes")

    assert list(server.provider.clients) == [client_id]
    assert again.provider("mcp_notes").client_id == client_id
    assert client_id.encode() not in raw
    assert again.vault.connected() == []  # the registered client is nobody's connection


async def test_mcp_oauth_discovery_does_not_follow_a_redirect(tmp_path, server):
    connections = make_connections(tmp_path, notes_config(f"{server.base}/moved"), RELAXED)

    with pytest.raises(OAuthError, match="redirect"):
        await connections.prepare("mcp_notes")

    assert server.provider.clients == {}


@pytest.mark.parametrize("issuer", ["https://169.254.169.254", "https://localhost.evil.example"])
async def test_mcp_oauth_endpoints_the_metadata_names_are_held_to_the_discovery_rules(tmp_path, issuer):
    with loopback_mcp_auth_server(issuer=issuer) as elsewhere:
        config = notes_config(elsewhere.url, authorization_server=elsewhere.base)
        # A seeded client: no registration, so only the token endpoint's check can refuse.
        seed = json.dumps([{"service": "mcp_notes_oauth_client", "credentials": {"client_id": "seeded"}}])
        connections = make_connections(tmp_path, config, {**RELAXED, "MINDROOM_CREDENTIAL_SEEDS_JSON": seed})

        with pytest.raises(OAuthError, match=r"never reached|cannot resolve") as refused:
            await connections.prepare("mcp_notes")

    assert "mcp_servers.notes.auth" in str(refused.value)
    assert elsewhere.provider.clients == {}


async def test_mcp_oauth_manual_endpoints_a_seeded_client_and_extra_token_params(tmp_path):
    """`discovery: manual` with a client from the seed: no discovery, and `extra_token_params` reach the token
    endpoint (an Authlib authorization server on loopback records what it was sent)."""
    with loopback_auth_server() as authlib:
        authlib.add_client("seeded-app", "seeded-secret", f"{BASE}/api/oauth/mcp_notes/callback")
        config = notes_config(
            "https://notes.example.org/mcp",
            discovery="manual",
            authorization_url=authlib.authorization_url,
            token_url=authlib.token_url,
            token_endpoint_auth_method="client_secret_post",
            extra_token_params={"audience": "notes-api"},
        )
        credentials = {"client_id": "seeded-app", "client_secret": "seeded-secret"}
        seed = json.dumps([{"service": "mcp_notes_oauth_client", "credentials": credentials}])
        connections = make_connections(tmp_path, config, {"MINDROOM_CREDENTIAL_SEEDS_JSON": seed})

        await connections.prepare("mcp_notes")
        link = connections.connect_link(ALICE, "mcp_notes")
        authorization, secret = connections.authorize("mcp_notes", link.rsplit("=", 1)[1])
        _, code, state = await approve(authorization, "alice")
        await connections.complete("mcp_notes", state, code, secret)

    assert authlib.state.token_requests[-1]["audience"] == "notes-api"
    assert connections.vault.load(ALICE, "mcp_notes") is not None
    assert connections.vault.load_client("mcp_notes") is None  # nothing registered
