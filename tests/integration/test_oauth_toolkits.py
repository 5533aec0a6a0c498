"""A catalogue toolkit acting as the person, on the real daemon and a real Synapse: alice connects her `github`
account in a direct message through the real authorization server (a browser, httpx, follows the link back to
the daemon's callback), then the agent's `github` toolkit (agno's GithubTools, PyGithub) reads a repository
from a loopback GitHub API that answers only to a token the server issued, as alice; bob, not connected,
gets the link to connect instead, and the API never sees a request for him."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies
from tests.integration.test_oauth_connections import _command, daemon_api, public_at_free_port
from tests.integration.test_tools import last_tool_message
from tests.oauth.auth_server import loopback_auth_server
from tests.oauth.github_api import loopback_github_api
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve

pytest.importorskip("github")
pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

_LINK = re.compile(r"https?://\S+/api/oauth/github/authorize\?link=[\w-]+")


async def test_github_toolkit_reads_as_the_connected_person_and_asks_others_to_connect(e2e: E2E):
    with loopback_auth_server() as server, loopback_github_api(server) as api:
        alice, bob = await e2e.human(), await e2e.human("bob")
        port, base = public_at_free_port(e2e)
        server.add_client(CLIENT_ID, CLIENT_SECRET, f"{base}/api/oauth/github/callback")
        agent, room = e2e.name("coder"), e2e.name("room")
        github = {"base_url": api.url, "include_tools": ["get_repository"]}
        agents = {agent: {"display_name": "Coder", "model": "default", "rooms": [room], "tools": [{"github": github}]}}
        provider = {
            "authorization_url": server.authorization_url,
            "token_url": server.token_url,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
        }
        users = [alice.user_id, bob.user_id]
        await e2e.start(e2e.basic_config(users, agents, oauth_providers={"github": provider}))
        agent_id = e2e.user_id(agent)

        async with daemon_api(e2e, port):
            dm = await alice.create_room([agent_id], encrypted=False, direct=True)
            await alice.wait_for_member(dm, agent_id)
            [link] = _LINK.findall(await _command(alice, dm, agent_id, "!connect github"))
            async with httpx.AsyncClient(follow_redirects=False) as browser:
                opened = await browser.get(link)
                callback, _, _ = await approve(opened.headers["location"], "alice-at-github")
                connected = await browser.get(callback)

            e2e.model_server.script(
                ToolCall("get_repository", {"repo_name": "acme/widgets"}),
                Text("Read it."),
                ToolCall("get_repository", {"repo_name": "acme/widgets"}),
                Text("Please connect."),
                model="agent-model",
            )
            asked = await alice.send(dm, "what is acme/widgets?")
            await alice.wait_for(thread_replies(asked, agent_id))
            alice_result = json.loads(last_tool_message(e2e.model_server.requests[-1]))
            bob_dm = await bob.create_room([agent_id], encrypted=False, direct=True)
            await bob.wait_for_member(bob_dm, agent_id)
            bob_asked = await bob.send(bob_dm, "what is acme/widgets?")
            await bob.wait_for(thread_replies(bob_asked, agent_id))
            bob_result = last_tool_message(e2e.model_server.requests[-1])

    assert connected.status_code == 200
    assert (alice_result["name"], alice_result["description"]) == ("acme/widgets", "seen by alice-at-github")
    assert "not connected" in bob_result and _LINK.search(bob_result)
    [token] = [t.access_token for t in server.state.tokens if t.user == "alice-at-github"]
    assert api.authorizations == [f"token {token}"]
