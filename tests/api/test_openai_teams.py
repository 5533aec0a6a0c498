"""`/v1` and teams: each team is the model `team/<team>`, and a completion of it is the team's answer."""

from __future__ import annotations

import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.api.test_openai import KEYED, openai_client

pytestmark = pytest.mark.asyncio


async def test_v1_lists_teams_as_team_models_and_answers_as_the_team(make_api, model_server):
    base = {"provider": "openai", "extra_kwargs": {"base_url": model_server.base_url, "max_retries": 0}}
    models = {name: {**base, "id": name} for name in ("m-lead", "m-helper")}
    agents = {"helper": {"display_name": "Helper", "model": "m-helper"}}
    teams = {"crew": {"display_name": "Crew", "role": "answers together", "agents": ["helper"], "model": "m-lead"}}
    model_server.script(
        ToolCall("delegate_task_to_member", {"member_id": "helper", "task": "say hi"}),
        Text("We say hi."),
        model="m-lead",
    )
    model_server.script(Text("Hi."), model="m-helper")
    api = await make_api(agents, env=KEYED, models=models, teams=teams)
    client = openai_client(api)

    listed = await client.models.list()
    answer = await client.chat.completions.create(model="team/crew", messages=[{"role": "user", "content": "hello"}])

    assert [model.id for model in listed.data] == ["auto", "helper", "team/crew"]
    crew = listed.data[2].model_dump()
    assert crew["name"] == "Crew" and crew["description"] == "answers together"
    assert answer.model == "team/crew"
    assert answer.choices[0].message.content == (
        "🤝 **Team Response** (Helper)\n\n**Helper**: Hi.\n\n**Team Consensus**: We say hi."
    )
    assert api.bench.client("crew").messages == []  # nothing went to Matrix
