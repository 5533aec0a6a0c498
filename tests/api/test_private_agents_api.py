"""Private agents at the HTTP doors: `/v1` offers none (nor an agent handing questions to one), as MindRoom;
the dashboard's overview lists them, marked with their `private.per`."""

from __future__ import annotations

import pytest
from openai import NotFoundError

pytestmark = pytest.mark.asyncio

KEY = "sk-test-key-1"
DASHBOARD = "dashboard-key-123456"
ENV = {"OPENAI_COMPAT_API_KEYS": KEY, "MINDROOM_API_KEY": DASHBOARD}
AGENTS = {
    "helper": {"display_name": "Helper", "delegate_to": ["writer"]},
    "writer": {"display_name": "Writer"},
    "buddy": {"display_name": "Buddy", "private": {"per": "user"}},
    "asker": {"display_name": "Asker", "delegate_to": ["buddy"]},
    "coach": {"display_name": "Coach", "private": {"per": "user_agent"}},
}


async def test_v1_offers_no_private_agent_nor_one_reaching_it(make_api, model_server):
    relay = {"display_name": "Relay", "delegate_to": ["writer", "asker"]}  # reaches a private agent two hands away
    api = await make_api({**AGENTS, "relay": relay}, env=ENV)
    client = api.openai(KEY)

    models = await client.models.list()

    assert [model.id for model in models.data] == ["auto", "helper", "writer"]
    for refused in ("buddy", "asker", "relay", "coach"):
        with pytest.raises(NotFoundError):
            await client.chat.completions.create(model=refused, messages=[{"role": "user", "content": "hi"}])
    assert model_server.requests == []  # refused before any model was asked


async def test_dashboard_overview_marks_private_agents(make_api):
    api = await make_api(AGENTS, env=ENV)

    overview = (await api.client(DASHBOARD).get("/api/overview")).json()

    marked = {agent["name"]: agent["private"] for agent in overview["agents"]}
    assert marked == {"helper": None, "writer": None, "buddy": "user", "asker": None, "coach": "user_agent"}
