"""Teams on the bench: a team's account answers a mention once, shows its members' parts, fires the message
hooks once as the team, and its members' tool calls reach the tool hooks under the member's name."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mindroom.bots.recovery import recover_interrupted
from mindroom.hooks import (
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_TOOL_BEFORE_CALL,
    hook,
)
from mindroom.testing.model_server import ScriptedModelServer, Stream, Text, ToolCall
from tests.bots.bench import ALICE, LOBBY, registry_of

pytestmark = pytest.mark.asyncio


def team_world(server: ScriptedModelServer, mode: str = "coordinate", **team: Any) -> dict[str, Any]:
    """Two agents and a team of them in the lobby; the leader and each member have a model of their own."""
    models = {
        name: {"provider": "openai", "id": name, "extra_kwargs": {"base_url": server.base_url, "max_retries": 0}}
        for name in ("m-lead", "m-research", "m-writer")
    }
    agents = {
        "research": {"display_name": "Research", "model": "m-research", "rooms": ["lobby"], "tools": ["calculator"]},
        "writer": {"display_name": "Writer", "model": "m-writer", "rooms": ["lobby"]},
    }
    teams = {
        "crew": {
            "display_name": "Crew",
            "role": "answers together",
            "agents": ["research", "writer"],
            "model": "m-lead",
            "mode": mode,
            "rooms": ["lobby"],
            **team,
        }
    }
    return {"agents": agents, "models": models, "teams": teams}


def mention(bench: Any, text: str) -> Any:
    crew = bench.user_id("crew")
    return bench.server.message(LOBBY, ALICE, f"@crew {text}", extra_content={"m.mentions": {"user_ids": [crew]}})


async def test_team_mention_is_answered_once_by_the_teams_account_with_each_part(make_bench, model_server):
    seen: list[tuple[str, Any]] = []

    @hook(EVENT_MESSAGE_ENRICH)
    async def enrich(ctx: Any) -> None:
        seen.append(("enrich", (ctx.target_entity_name, ctx.target_member_names)))

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def before(ctx: Any) -> None:
        seen.append(("before", ctx.draft.response_kind))

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def after(ctx: Any) -> None:
        seen.append(("after", (ctx.envelope.agent_name, ctx.result.response_kind)))

    model_server.script(ToolCall("delegate_task_to_members", {"task": "ideas"}), Text("Go hiking."), model="m-lead")
    model_server.script(Text("Hills."), model="m-research")
    model_server.script(Text("Lakes."), model="m-writer")
    world = team_world(model_server, "collaborate")
    bench = await make_bench(world.pop("agents"), registry=registry_of(enrich, before, after), **world)

    await bench.deliver(mention(bench, "where to go?"))
    await bench.settle()

    [answer] = bench.client("crew").messages
    assert answer.body.startswith("🤝 **Team Response** (Research, Writer)")
    assert "**Research**: Hills." in answer.body and "**Writer**: Lakes." in answer.body
    assert answer.body.endswith("**Team Consensus**: Go hiking.")
    assert bench.client("research").messages == [] and bench.client("writer").messages == []
    assert seen == [
        ("enrich", ("crew", ("research", "writer"))),
        ("before", "team"),
        ("after", ("crew", "team")),
    ]


async def test_a_members_tool_call_passes_the_tool_hooks_as_the_members(make_bench, model_server):
    calls: list[tuple[str, str]] = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def gate(ctx: Any) -> None:
        calls.append((ctx.agent_name, ctx.tool_name))
        ctx.decline("not during the test")

    model_server.script(
        ToolCall("delegate_task_to_member", {"member_id": "research", "task": "add"}), Text("Sorted."), model="m-lead"
    )
    model_server.script(ToolCall("calculate", {"expression": "2+2"}), Text("No calculator today."), model="m-research")
    world = team_world(model_server)
    bench = await make_bench(world.pop("agents"), registry=registry_of(gate), **world)

    await bench.deliver(mention(bench, "what is 2+2?"))
    await bench.settle()

    assert calls == [("research", "calculate")]
    research = [r for r in model_server.requests if r["model"] == "m-research"]
    assert "[TOOL CALL DECLINED]" in str(research[-1]["messages"][-1]["content"])
    [answer] = bench.client("crew").messages
    assert "**Research**: No calculator today." in answer.body


async def test_the_router_may_choose_a_team(make_bench, model_server):
    model_server.script(Text("crew"), model="agent-model")  # the router's model names the team
    model_server.script(Text("Together then."), model="m-lead")
    world = team_world(model_server)
    bench = await make_bench(world.pop("agents"), **world)

    await bench.deliver(bench.server.message(LOBBY, ALICE, "who can help?"))
    await bench.settle()

    [answer] = bench.client("crew").messages
    assert answer.body.endswith("**Team Consensus**: Together then.")
    router_prompt = str(model_server.requests[0]["messages"])
    assert "crew" in router_prompt and "answers together" in router_prompt


async def test_a_streamed_team_answer_is_edited_in_place_and_an_edited_question_answered_again(
    make_bench, model_server
):
    model_server.script(Stream(["First ", "thought."]), Stream(["Second ", "thought."]), model="m-lead")
    world = team_world(model_server, enable_streaming=True)
    bench = await make_bench(world.pop("agents"), **world)
    question = mention(bench, "think")

    await bench.deliver(question)
    await bench.settle()
    await bench.deliver(bench.server.edit(LOBBY, ALICE, question.event_id, "@crew think again"))
    await bench.settle()

    client = bench.client("crew")
    [first] = client.messages
    assert client.edits[-1].target_event_id == first.event_id
    assert client.edits[-1].body.endswith("**Team Consensus**: Second thought.")
    lead = [r for r in model_server.requests if r["model"] == "m-lead"]
    assert "think again" in str(lead[-1]["messages"][-1]["content"])


async def test_an_unfinished_team_turn_is_replayed_once_after_a_crash(make_bench, model_server):
    model_server.set_default(Text("Back together."), model="m-lead")
    world = team_world(model_server)
    bench = await make_bench(world.pop("agents"), **world)
    journal = bench.daemon.stores.journal
    crew = bench.bots["crew"]
    question = mention(bench, "are you back?")
    journal.claim("crew", question.event_id, dataclasses.asdict(question))  # claimed, then the daemon died

    await recover_interrupted(crew, journal, crew.handlers)
    await bench.settle()
    await bench.deliver(question)  # the sync brings it again: already answered
    await bench.settle()

    [answer] = bench.client("crew").messages
    assert answer.body.endswith("**Team Consensus**: Back together.")
    assert journal.pending("crew") == []
