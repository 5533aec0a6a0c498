"""A person's OAuth connection through teams and hand-offs, on the real daemon and a real Synapse: a team
member's or a hand-off target's tool call acts with the token of the person who asked, never with another's
(the acting person is the requester, whichever agent runs the tool)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_oauth_connections import daemon_api, public_at_free_port
from tests.integration.test_teams import with_models
from tests.integration.test_tools import last_tool_message
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

_LINK = re.compile(r"https?://\S+/api/oauth/acme/authorize\?link=[\w-]+")
ME = ToolCall("oauth_api_request", {"provider": "acme", "path": "/me"})


@pytest.fixture
def acme() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


def _requests_of(e2e: E2E, model: str) -> list[dict]:
    return [request for request in e2e.model_server.requests if request.get("model") == model]


async def _connect(e2e: E2E, human: HumanClient, agent_id: str, user_at_acme: str) -> None:
    """`!connect acme` in a direct message with `agent_id`, and the browser's approval as `user_at_acme`."""
    dm = await human.create_room([agent_id], encrypted=False, direct=True)
    await human.wait_for_member(dm, agent_id)
    asked = await human.send(dm, "!connect acme")
    given = (await human.wait_for(thread_replies(asked)))["content"]["body"]
    [link] = _LINK.findall(given)
    assert "(it asks for: profile; it works once, for 10 minutes)" in given  # what is granted, before the page
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        opened = await browser.get(link)
        callback, _, _ = await approve(opened.headers["location"], user_at_acme)
        assert (await browser.get(callback)).status_code == 200


async def test_oauth_team_members_and_hand_off_targets_act_with_the_requesters_token(
    e2e: E2E, acme: LoopbackAuthServer
):
    server = acme
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    port, base = public_at_free_port(e2e)
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{base}/api/oauth/acme/callback")
    room, research, writer, crew, helper = (e2e.name(n) for n in ("room", "research", "writer", "crew", "helper"))
    agents = {
        research: {"display_name": "Research", "model": "m-research", "rooms": [room], "tools": ["oauth_api"]},
        writer: {"display_name": "Writer", "model": "m-writer", "rooms": [room]},
        helper: {"display_name": "Helper", "model": "m-helper", "rooms": [room], "delegate_to": [research]},
    }
    crew_entry = {"display_name": "Crew", "role": "answers together", "agents": [research, writer]}
    teams = {crew: {**crew_entry, "model": "m-lead", "mode": "coordinate", "rooms": [room]}}
    provider = {
        "authorization_url": server.authorization_url,
        "token_url": server.token_url,
        "api_base_url": server.api_url,
        "scopes": ["profile"],
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }
    config = e2e.basic_config([alice.user_id, bob.user_id], agents, teams=teams, oauth_providers={"acme": provider})
    config["models"] = with_models(e2e, "m-lead", "m-research", "m-writer", "m-helper")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    crew_id, helper_id, research_id = e2e.user_id(crew), e2e.user_id(helper), e2e.user_id(research)

    async with daemon_api(e2e, port):
        await _connect(e2e, alice, research_id, "alice-at-acme")
        delegate = ToolCall("delegate_task_to_member", {"member_id": research, "task": "who is asking, at acme?"})
        for _asker in ("alice", "bob"):
            e2e.model_server.script(delegate, Text("Asked."), model="m-lead")
            e2e.model_server.script(ME, Text("Looked it up."), model="m-research")
        root = await alice.send(room_id, f"@{crew} who am I at acme?", mentions=[crew_id])
        await alice.wait_for(thread_replies(root, crew_id))
        alice_in_team = json.loads(last_tool_message(_requests_of(e2e, "m-research")[-1]))
        root = await bob.send(room_id, f"@{crew} who am I at acme?", mentions=[crew_id])
        await bob.wait_for(thread_replies(root, crew_id))
        bob_in_team = last_tool_message(_requests_of(e2e, "m-research")[-1])

        hand_off = ToolCall("delegate_task", {"agent_name": research, "task": "who is asking, at acme?"})
        for _asker in ("alice", "bob"):
            e2e.model_server.script(hand_off, Text("Handed over."), model="m-helper")
            e2e.model_server.script(ME, Text("Looked it up."), model="m-research")
        root = await alice.send(room_id, f"@{helper} who am I at acme?", mentions=[helper_id])
        await alice.wait_for(
            lambda event: thread_replies(root, helper_id)(event) and event["content"]["body"] == "Handed over."
        )
        alice_handed = json.loads(last_tool_message(_requests_of(e2e, "m-research")[-1]))
        root = await bob.send(room_id, f"@{helper} who am I at acme?", mentions=[helper_id])
        await bob.wait_for(
            lambda event: thread_replies(root, helper_id)(event) and event["content"]["body"] == "Handed over."
        )
        bob_handed = last_tool_message(_requests_of(e2e, "m-research")[-1])

    assert json.loads(alice_in_team["body"])["user"] == "alice-at-acme"
    assert json.loads(alice_handed["body"])["user"] == "alice-at-acme"
    for refused in (bob_in_team, bob_handed):  # Bob never acts as Alice, through a team or a hand-off
        assert "not connected" in refused and "alice-at-acme" not in refused
