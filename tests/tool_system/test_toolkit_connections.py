"""agno toolkits acting with the requester's OAuth connection: agno's `GithubTools` (PyGithub) calls a loopback
GitHub API with the token each person got from the real authorization server, never another person's, and
with the operator's `GITHUB_ACCESS_TOKEN` instead when the operator set one."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.ai.tools import foreign_tool_specs
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.hooks import HookRegistry
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.service import OAuthConnections, provide_connections
from mindroom.oauth.vault import TokenVault
from mindroom.state.sqlite.connections import SqliteConnectionStore
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.catalog import build_tool_catalog
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS
from mindroom.tool_system.toolkits import toolkit_status
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.github_api import LoopbackGithubApi, loopback_github_api
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve, provider_entry

pytest.importorskip("github")

ALICE, BOB, CAROL = "@alice:example.org", "@bob:example.org", "@carol:example.org"
BASE = "https://bot.example.org"
OPERATOR = "operator-token-0123456789"


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


@pytest.fixture
def api(server: LoopbackAuthServer) -> Iterator[LoopbackGithubApi]:
    with loopback_github_api(server, operator_token=OPERATOR) as running:
        yield running


def _connections(tmp_path: Path, server: LoopbackAuthServer) -> OAuthConnections:
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{BASE}/api/oauth/github/callback")
    vault = TokenVault(SqliteConnectionStore(tmp_path / "state" / "connections.db"), Sealer(os.urandom(32)))
    entries = {"github": provider_entry(server)}
    return OAuthConnections(vault, lambda: entries, {"MINDROOM_PUBLIC_URL": BASE}, tmp_path)


async def _connect(connections: OAuthConnections, person: str, account: str) -> None:
    ticket = connections.connect_link(person, "github").rsplit("=", 1)[1]
    authorization, secret = connections.authorize("github", ticket)
    _, code, state = await approve(authorization, account)
    assert await connections.complete("github", state, code, secret) == person


def _github(tmp_path: Path, api: LoopbackGithubApi, env: dict[str, str]) -> tuple[RuntimePaths, ToolSpec]:
    entry = {"github": {"base_url": api.url, "include_tools": ["get_repository"]}}
    config = Config.model_validate({"agents": {"a": {"display_name": "A", "tools": [entry]}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", env)
    catalog = build_tool_catalog(config, [], adapt=foreign_tool_specs, runtime_paths=paths)
    [spec] = catalog.tools_for(["github"], AgentToolEnvironment("a", tmp_path / "w"))
    return paths, spec


async def _as(person: str, paths: RuntimePaths, spec: ToolSpec) -> str:
    context = ToolRuntimeContext(HookRegistry.empty(), agent_name="a", requester_id=person, runtime_paths=paths)
    with bind_runtime_context(context):
        return await call_tool(spec, "a", {"repo_name": "acme/widgets"})


def _seen_by(result: str) -> str:
    return str(json.loads(result)["description"])


@pytest.mark.asyncio
async def test_github_toolkit_calls_with_each_requesters_own_token(tmp_path: Path, server, api):
    connections = _connections(tmp_path, server)
    paths, spec = _github(tmp_path, api, {})
    withdraw = provide_connections(paths.storage_root, connections)
    try:
        await _connect(connections, ALICE, "alice-at-github")
        await _connect(connections, BOB, "bob-at-github")
        # Interleaved on the one toolkit the agent has: each call is its requester's alone.
        results = await asyncio.gather(*(_as(person, paths, spec) for person in [ALICE, BOB, ALICE, BOB, CAROL]))
    finally:
        withdraw()

    assert [_seen_by(result) for result in results[:4]] == ["seen by alice-at-github", "seen by bob-at-github"] * 2
    assert "not connected" in results[4] and "!connect github" in results[4]
    alice_token = server.live_tokens("alice-at-github")[0].access_token
    assert f"token {alice_token}" in api.authorizations and not [a for a in api.authorizations if "pending" in a]
    assert len(api.authorizations) == 4  # the person without a connection never reached the API


@pytest.mark.asyncio
async def test_github_toolkit_uses_the_operators_token_when_one_is_set(tmp_path: Path, server, api):
    connections = _connections(tmp_path, server)
    paths, spec = _github(tmp_path, api, {"GITHUB_ACCESS_TOKEN": OPERATOR})
    withdraw = provide_connections(paths.storage_root, connections)
    try:
        await _connect(connections, ALICE, "alice-at-github")
        alice, carol = await _as(ALICE, paths, spec), await _as(CAROL, paths, spec)
    finally:
        withdraw()

    assert (_seen_by(alice), _seen_by(carol)) == ("seen by operator", "seen by operator")


@pytest.mark.asyncio
async def test_github_toolkit_outside_a_running_daemon_says_connections_need_one(tmp_path: Path, api):
    paths, spec = _github(tmp_path, api, {})

    result = await _as(ALICE, paths, spec)

    assert "running daemon" in result and api.authorizations == []


def test_toolkit_status_a_connection_stands_in_for_the_operators_credential():
    assert toolkit_status(AGNO_TOOLKITS["github"], {}).state == "available"
    # A toolkit without a connection still needs its credential; a near miss in the name does not count.
    assert toolkit_status(AGNO_TOOLKITS["linear"], {"LINEAR_API_KEY_": "x"}).state == "missing_credential"


def test_google_toolkit_takes_the_persons_token_as_its_credentials_without_another_way_in(tmp_path: Path):
    pytest.importorskip("googleapiclient")
    from agno.tools.google.calendar import GoogleCalendarTools

    from mindroom.tool_system.toolkit_connections import fit_credentials, google_credentials

    connection = AGNO_TOOLKITS["google_calendar"].connection
    assert connection is not None and connection.provider == "google_calendar"
    toolkit = GoogleCalendarTools(creds=google_credentials("person-access-token", []), token_path=str(tmp_path / "t"))
    fit_credentials(toolkit, connection)

    # agno takes these credentials as they are: no token file, no service account, no browser flow.
    assert toolkit._resolve_creds().token == "person-access-token"
    assert not (tmp_path / "t").exists()
