"""An MCP server with `auth` on the real daemon and a real Synapse: the server is the MCP SDK's own OAuth server on
loopback. `!connect mcp_notes` in a direct message finds its endpoints and registers the daemon, the browser
(httpx) follows the link through the server's sign-in back to the daemon's callback, and the agent's call of
the server's tool then runs with that person's token; a person who has not connected gets the link instead.
Asked in a shared room, `!connect` points to a direct message and contacts nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies
from tests.integration.test_oauth_connections import _body, _command, daemon_api, public_at_free_port
from tests.integration.test_tools import last_tool_message
from tests.tool_system.mcp.oauth_server import LoopbackMCPAuthServer, loopback_mcp_auth_server

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

_LINK = re.compile(r"https?://\S+/api/oauth/mcp_notes/authorize\?link=[\w-]+")


@pytest.fixture
def server() -> Iterator[LoopbackMCPAuthServer]:
    with loopback_mcp_auth_server() as running:
        yield running


async def test_mcp_oauth_connect_in_a_dm_then_the_agent_calls_the_server_as_that_person(
    e2e: E2E, server: LoopbackMCPAuthServer
):
    relaxed = {"MINDROOM_MCP_OAUTH_ALLOW_INSECURE_DISCOVERY": "1", "MINDROOM_MCP_OAUTH_ALLOW_PRIVATE_DISCOVERY": "1"}
    port, _ = public_at_free_port(e2e, **relaxed)
    alice, bob = await e2e.human(encrypted=True), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    notes = {"transport": "streamable-http", "url": server.url, "allow_private_network": True}
    notes["auth"] = {"type": "oauth"}
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["mcp_notes"]}}
    await e2e.start(e2e.basic_config([alice.user_id, bob.user_id], agents, mcp_servers={"notes": notes}))
    agent_id, room_id = e2e.user_id(agent), e2e.room_id(room)
    await e2e.joined(bob, room_id)
    untouched = (dict(server.provider.clients), list(server.calls))

    async with daemon_api(e2e, port):
        in_the_room = await _command(bob, room_id, agent_id, "!connect mcp_notes")
        registered_by_then = dict(server.provider.clients)
        dm = await alice.create_room([agent_id], direct=True)
        await alice.wait_for_member(dm, agent_id)
        given = await _command(alice, dm, agent_id, "!connect mcp_notes")
        [link] = _LINK.findall(given)
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            opened = await browser.get(link)
            callback, _, _ = await server.approve(opened.headers["location"], "alice")
            connected = await browser.get(callback)

        e2e.model_server.script(
            ToolCall("notes_call_tool", {"tool_name": "whoami"}),
            Text("You are alice."),
            ToolCall("notes_call_tool", {"tool_name": "whoami"}),
            Text("Please connect first."),
            model="agent-model",
        )
        asked = await alice.send(dm, "who am I at notes?")
        answer = await alice.wait_for(thread_replies(asked, agent_id))
        alice_result = last_tool_message(e2e.model_server.requests[-1])
        bob_asked = await bob.send(room_id, "who am I at notes?", mentions=[agent_id])
        await bob.wait_for(thread_replies(bob_asked, agent_id))
        bob_result = last_tool_message(e2e.model_server.requests[-1])

    assert untouched == ({}, [])  # nothing reached the server before someone connected
    assert "direct message" in in_the_room and registered_by_then == {}  # asked in a room: the server not contacted
    assert opened.status_code == 302 and connected.status_code == 200
    assert len(server.provider.clients) == 1
    assert "you are alice" in alice_result and _body(answer) == "You are alice."
    assert "not connected" in bob_result and "!connect mcp_notes" in bob_result
    assert server.calls == [("whoami", "alice")]
