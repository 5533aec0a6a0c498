"""The `oauth_api` tool: the provider's API called with the token of the person the turn speaks for, against a
real authorization server and resource API on loopback; another person is refused with a link to connect."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.constants import RuntimePaths
from mindroom.oauth.service import OAuthConnections, provide_connections
from mindroom.tool_system.builtin.oauth_api import ConnectionNeededError, oauth_api_request, token_for
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import approve, make_connections

pytestmark = pytest.mark.asyncio

ALICE, BOB = "@alice:hs", "@bob:hs"
BASE = "https://bot.example.org"


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


@pytest.fixture
def connections(tmp_path: Path, server: LoopbackAuthServer) -> Iterator[OAuthConnections]:
    made = make_connections(tmp_path, server, BASE)
    withdraw = provide_connections(tmp_path / "data", made)
    yield made
    withdraw()


def turn(tmp_path: Path, requester: str):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    return bind_runtime_context(
        ToolRuntimeContext(runtime_paths=paths, agent_name="helper", room_id="!r:hs", requester_id=requester)
    )


async def _connect(connections: OAuthConnections, person: str, account: str) -> None:
    link = connections.connect_link(person, "acme")
    authorization, secret = connections.authorize("acme", link.rsplit("=", 1)[1])
    _, code, state = await approve(authorization, account)
    await connections.complete("acme", state, code, secret)


async def test_oauth_api_calls_the_api_as_the_person_the_turn_speaks_for(tmp_path, connections, server):
    await _connect(connections, ALICE, "alice-at-acme")
    await _connect(connections, BOB, "bob-at-acme")

    with turn(tmp_path, ALICE):
        alice = json.loads(await oauth_api_request("acme", "/me"))
    with turn(tmp_path, BOB):
        bob = json.loads(await oauth_api_request("acme", "/me"))

    assert (alice["http_status"], json.loads(alice["body"])["user"]) == (200, "alice-at-acme")
    assert json.loads(bob["body"])["user"] == "bob-at-acme"


class _Members:
    """The room's members as the agent's account reads them (the only part of a room these tests need)."""

    def __init__(self, members: list[str]) -> None:
        self.members = members

    def client(self, agent: str) -> _Members | None:
        return self if agent == "helper" else None

    async def room_members(self, room_id: str) -> list[str]:
        return self.members

    def user_ids(self) -> dict[str, str]:
        return {"router": "@router:hs", "helper": "@helper:hs"}


@pytest.mark.parametrize(
    ("members", "linked"),
    [
        (["@helper:hs", BOB], True),
        (["@helper:hs", "@router:hs", BOB], True),
        (["@helper:hs", BOB, ALICE], False),
        (["@helper:hs", BOB, "@helper:hs.evil"], False),
        (None, False),
    ],
)
async def test_oauth_api_a_person_without_a_connection_gets_a_message_with_the_link_in_a_dm_only(
    tmp_path, connections, members, linked
):
    await _connect(connections, ALICE, "alice-at-acme")
    withdraw = provide_daemon_parts(
        tmp_path / "data", DaemonParts(rooms=_Members(members)) if members else DaemonParts()
    )

    try:
        with turn(tmp_path, BOB), pytest.raises(ConnectionNeededError) as refused:
            await oauth_api_request("acme", "/me")
    finally:
        withdraw()

    assert isinstance(refused.value, ToolError)
    assert "not connected" in str(refused.value)
    assert (f"{BASE}/api/oauth/acme/authorize?link=" in str(refused.value)) is linked
    assert ("direct message" in str(refused.value)) is not linked
    with turn(tmp_path, ""), pytest.raises(ToolError, match="no person"):
        await token_for("", "acme")


async def test_oauth_api_refreshes_an_expired_token_before_the_call(tmp_path, connections, server):
    server.set_access_token_lifetime(30)
    await _connect(connections, ALICE, "alice-at-acme")
    server.expire_access_tokens()

    with turn(tmp_path, ALICE):
        answer = json.loads(await oauth_api_request("acme", "/me"))

    assert answer["http_status"] == 200
    assert server.state.token_requests[-1]["grant_type"] == "refresh_token"


@pytest.mark.parametrize("path", ["me", "//evil.example/me", "/../token", "/a/./b", "\\\\evil.example"])
async def test_oauth_api_only_paths_under_the_operators_base_url(tmp_path, connections, server, path):
    await _connect(connections, ALICE, "alice-at-acme")
    before = len(server.state.token_requests)

    with turn(tmp_path, ALICE), pytest.raises(ToolError, match="path"):
        await oauth_api_request("acme", path)
    assert len(server.state.token_requests) == before


async def test_oauth_api_outside_a_running_daemon_or_for_an_unknown_provider_is_refused(tmp_path, connections):
    with pytest.raises(ToolError, match="conversation"):
        await oauth_api_request("acme", "/me")
    with turn(tmp_path, ALICE), pytest.raises(ToolError, match="unknown OAuth provider 'acme_'"):
        await oauth_api_request("acme_", "/me")
