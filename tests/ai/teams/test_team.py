"""A team's turn through agno's real Team and OpenAI client against the scripted model server.

Each member and the leader have a model name of their own, so the server's script says who answers what.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mindroom.ai import GenerationRequest, forget_turn, generate, generate_early, load_history, stream_generate
from mindroom.ai.teams.plan import TeamMember, TeamPlan
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import Hang, HttpError, ScriptedModelServer, Stream, Text, ToolCall

ENV: dict[str, str] = {}
pytestmark = pytest.mark.asyncio


def model(server: ScriptedModelServer, name: str) -> ModelConfig:
    return ModelConfig(provider="openai", id=name, extra_kwargs={"base_url": server.base_url, "max_retries": 0})


def team_request(
    server: ScriptedModelServer, mode: str, message: str = "plan the trip", *, timeout_s: float = 30.0, **fields: Any
) -> GenerationRequest:
    members = (
        TeamMember("research", "Research", "finds facts", (), model(server, "m-research")),
        TeamMember("writer", "Writer", "writes it up", (), model(server, "m-writer")),
    )
    values: dict[str, Any] = {
        "agent_name": "crew",
        "display_name": "Crew",
        "role": "plans trips",
        "instructions": (),
        "model": model(server, "m-lead"),
        "user_message": message,
        "session_id": "thread-1",
        "num_history_runs": 5,
        "markdown": True,
        "source_event_id": "$question",
        "team": TeamPlan(mode, members, timeout_s),
    }
    values.update(fields)
    return GenerationRequest(**values)


def models_asked(server: ScriptedModelServer) -> list[str]:
    return [request["model"] for request in server.requests]


async def test_coordinate_team_answers_with_the_delegated_members_part_and_the_consensus(
    model_server: ScriptedModelServer, storage_root: Path
):
    model_server.script(
        ToolCall("delegate_task_to_member", {"member_id": "research", "task": "find flights"}),
        Text("Fly on Monday."),
        model="m-lead",
    )
    model_server.script(Text("Monday is cheapest."), model="m-research")

    result = await generate(team_request(model_server, "coordinate"), storage_root=storage_root, env=ENV)

    assert result.text == (
        "🤝 **Team Response** (Research, Writer)\n\n**Research**: Monday is cheapest.\n\n"
        "**Team Consensus**: Fly on Monday."
    )
    assert models_asked(model_server) == ["m-lead", "m-research", "m-lead"]


async def test_collaborate_team_asks_every_member_once(model_server: ScriptedModelServer, storage_root: Path):
    model_server.script(ToolCall("delegate_task_to_members", {"task": "ideas?"}), Text("Both agree."), model="m-lead")
    model_server.script(Text("Beach."), model="m-research")
    model_server.script(Text("Mountains."), model="m-writer")

    result = await generate(team_request(model_server, "collaborate"), storage_root=storage_root, env=ENV)

    assert "**Research**: Beach." in result.text and "**Writer**: Mountains." in result.text
    assert result.text.endswith("**Team Consensus**: Both agree.")
    assert sorted(models_asked(model_server)) == ["m-lead", "m-lead", "m-research", "m-writer"]


async def test_routed_team_shows_the_chosen_members_answer_once(model_server: ScriptedModelServer, storage_root: Path):
    model_server.script(ToolCall("delegate_task_to_member", {"member_id": "writer", "task": "write"}), model="m-lead")
    model_server.script(Stream(["Dear ", "reader."]), model="m-writer")

    streamed = [
        delta
        async for delta in stream_generate(team_request(model_server, "route"), storage_root=storage_root, env=ENV)
    ]

    text = "".join(streamed)
    assert text == "🤝 **Team Response** (Research, Writer)\n\n**Writer**: Dear reader."
    assert models_asked(model_server) == ["m-lead", "m-writer"]


async def test_streamed_team_turn_shows_parts_as_members_finish_and_is_stored_as_shown(
    model_server: ScriptedModelServer, storage_root: Path
):
    model_server.script(ToolCall("delegate_task_to_members", {"task": "go"}), Stream(["All ", "set."]), model="m-lead")
    model_server.script(Stream(["Beach", "."]), model="m-research")
    model_server.script(Text("Hills."), model="m-writer")

    deltas = [
        delta
        async for delta in stream_generate(
            team_request(model_server, "collaborate"), storage_root=storage_root, env=ENV
        )
    ]

    text = "".join(deltas)
    assert text.startswith("🤝 **Team Response** (Research, Writer)")
    assert text.endswith("**Team Consensus**: All set.")
    assert len(deltas) >= 4  # header, two parts, consensus deltas: streamed, not given at once
    history = await load_history("crew", "thread-1", storage_root=storage_root)
    assert history[0] == ("user", "plan the trip")
    assert history[-1][0] == "assistant"


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_failing_and_a_slow_member_are_named_and_the_team_still_answers(
    model_server: ScriptedModelServer, storage_root: Path, streamed: bool
):
    model_server.script(ToolCall("delegate_task_to_members", {"task": "go"}), Text("Done anyway."), model="m-lead")
    model_server.set_default(HttpError(500, "secret provider detail"), model="m-research")
    model_server.script(Hang(), model="m-writer")
    request = team_request(model_server, "collaborate", timeout_s=0.5)

    if streamed:
        text = "".join([delta async for delta in stream_generate(request, storage_root=storage_root, env=ENV)])
    else:
        text = (await generate(request, storage_root=storage_root, env=ENV)).text

    assert "⚠️ **Research** did not answer: its model failed." in text
    assert "⚠️ **Writer** did not answer: no answer within 0.5 s." in text
    assert "secret provider detail" not in text
    assert text.endswith("**Team Consensus**: Done anyway.")


async def test_team_history_is_per_thread_and_an_edit_replaces_the_stored_turn(
    model_server: ScriptedModelServer, storage_root: Path
):
    model_server.set_default(Text("Noted."), model="m-lead")
    await generate(team_request(model_server, "coordinate", "first"), storage_root=storage_root, env=ENV)
    await generate(
        team_request(model_server, "coordinate", "elsewhere", session_id="thread-2"), storage_root=storage_root, env=ENV
    )
    second = team_request(model_server, "coordinate", "second", source_event_id="$second")
    early = await generate_early(second, storage_root=storage_root, env=ENV)
    await early.stored()

    last = model_server.requests[-1]
    seen = [message.get("content") for message in last["messages"] if message["role"] == "user"]
    assert any("first" in str(text) for text in seen) and not any("elsewhere" in str(text) for text in seen)
    assert early.text.endswith("**Team Consensus**: Noted.")
    assert await forget_turn("crew", "thread-1", "$second", storage_root=storage_root) == 1
    assert [
        text for role, text in await load_history("crew", "thread-1", storage_root=storage_root) if role == "user"
    ] == ["first"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_model_call_hooks_see_each_members_own_name_and_the_leaders_around_them(
    model_server: ScriptedModelServer, storage_root: Path, stream: bool
):
    from mindroom.hooks import EVENT_MODEL_AFTER_CALL, EVENT_MODEL_BEFORE_CALL, HookRegistry, hook
    from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
    from tests.hooks.support import stub_plugin

    before: list[tuple[str, str]] = []
    after: list[tuple[str, str]] = []

    @hook(EVENT_MODEL_BEFORE_CALL)
    async def gate(ctx: Any) -> None:
        before.append((ctx.agent_name, ctx.model_id))

    @hook(EVENT_MODEL_AFTER_CALL)
    async def observe(ctx: Any) -> None:
        after.append((ctx.agent_name, ctx.model_id))

    @hook(EVENT_MODEL_AFTER_CALL, agents=["research"])
    async def research_only(ctx: Any) -> None:
        after.append(("research-only", ctx.model_id))

    registry = HookRegistry.from_plugins([stub_plugin("watch", [gate, observe, research_only])])
    model_server.script(
        ToolCall("delegate_task_to_member", {"member_id": "research", "task": "find flights"}),
        Stream(["Fly on Monday."]) if stream else Text("Fly on Monday."),
        model="m-lead",
    )
    model_server.script(Stream(["Monday."]) if stream else Text("Monday."), model="m-research")
    request = team_request(model_server, "coordinate")

    with bind_runtime_context(ToolRuntimeContext(registry=registry, agent_name="crew", room_id="!room:localhost")):
        if stream:
            [_ async for _ in stream_generate(request, storage_root=storage_root, env=ENV)]
        else:
            await generate(request, storage_root=storage_root, env=ENV)

    expected = [("crew", "m-lead"), ("research", "m-research"), ("crew", "m-lead")]
    assert before == expected
    assert [entry for entry in after if entry[0] != "research-only"] == expected
    assert ("research-only", "m-research") in after and ("research-only", "m-lead") not in after
