"""Model-call hooks through agno's real OpenAI client against the scripted model server: each round-trip of a
turn passes `model:before_call` (rewrite or refuse) and `model:after_call` (the reply)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mindroom.ai import GenerationRequest, generate, load_history, stream_generate
from mindroom.ai.model_hooks import model_call_hooks
from mindroom.config.main import ModelConfig
from mindroom.hooks import (
    EVENT_MODEL_AFTER_CALL,
    EVENT_MODEL_BEFORE_CALL,
    HookRegistry,
    ModelAfterCallContext,
    ModelBeforeCallContext,
    hook,
    hook_telemetry,
)
from mindroom.testing.model_server import ScriptedModelServer, Stream, Text, ToolCall
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from tests.hooks.support import stub_plugin

ENV: dict[str, str] = {}
ROOM = "!room:localhost"


def request_for(model: ModelConfig, message: str, **overrides: Any) -> GenerationRequest:
    fields: dict[str, Any] = {
        "agent_name": "helper",
        "display_name": "Helper",
        "role": "",
        "instructions": (),
        "model": model,
        "user_message": message,
        "session_id": "thread-1",
        "num_history_runs": 10,
        "markdown": False,
        "user_id": "@alice:localhost",
    }
    fields.update(overrides)
    return GenerationRequest(**fields)


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny in {city}"


async def run_turn(registry: HookRegistry, request: GenerationRequest, storage_root: Path, *, stream: bool) -> str:
    context = ToolRuntimeContext(registry=registry, agent_name=request.agent_name, room_id=ROOM)
    with bind_runtime_context(context):
        if stream:
            return "".join([delta async for delta in stream_generate(request, storage_root=storage_root, env=ENV)])
        return (await generate(request, storage_root=storage_root, env=ENV)).text


def registry_of(*callbacks: Any, name: str = "guard", **kwargs: Any) -> HookRegistry:
    return HookRegistry.from_plugins([stub_plugin(name, callbacks, **kwargs)])


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True])
async def test_model_hooks_rewrite_second_round_trip_only_that_request_and_not_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, stream: bool
) -> None:
    seen: list[int] = []

    @hook(EVENT_MODEL_BEFORE_CALL)
    async def rewrite(ctx: ModelBeforeCallContext) -> None:
        seen.append(ctx.round_trip)
        if ctx.round_trip == 2:
            assert ctx.messages[-1]["role"] == "tool"
            ctx.messages[-1]["content"] = "Raining in Paris"
            ctx.messages.append({"role": "user", "content": "Answer in French. key sk-abcdefghijklmnopqrstuvwx"})

    model_server.script(ToolCall("get_weather", {"city": "Paris"}, call_id="call_1"), Stream(["Il pleut."]))
    request = request_for(scripted_model, "Weather in Paris?", tools=(get_weather,))

    text = await run_turn(registry_of(rewrite), request, storage_root, stream=stream)

    assert text == "Il pleut."
    assert seen == [1, 2]
    first, second = model_server.requests
    assert first["messages"][-1] == {"role": "user", "content": "Weather in Paris?"}
    assert second["messages"][-2]["content"] == "Raining in Paris"
    assert second["messages"][-2]["tool_call_id"] == "call_1"
    added = second["messages"][-1]
    assert added["role"] == "user"
    assert added["content"].startswith("Answer in French. key ")
    assert "sk-abcdefghijklmnopqrstuvwx" not in added["content"]  # a hook's text is redacted like a person's
    history = await load_history("helper", "thread-1", storage_root=storage_root)
    assert history == [("user", "Weather in Paris?"), ("assistant", "Il pleut.")]


@pytest.mark.asyncio
async def test_model_hooks_rewrite_of_params_drops_the_offered_tools(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    @hook(EVENT_MODEL_BEFORE_CALL)
    async def no_tools(ctx: ModelBeforeCallContext) -> None:
        assert [tool["function"]["name"] for tool in ctx.params["tools"]] == ["get_weather"]
        ctx.params["tools"] = None
        ctx.params["tool_choice"] = None

    model_server.script(Text("No tools today."))
    request = request_for(scripted_model, "Weather?", tools=(get_weather,))

    assert await run_turn(registry_of(no_tools), request, storage_root, stream=False) == "No tools today."
    assert "tools" not in model_server.requests[0]


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True])
async def test_model_hooks_decline_answers_with_the_reason_and_never_asks_the_model(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, stream: bool
) -> None:
    observed: list[ModelAfterCallContext] = []

    @hook(EVENT_MODEL_BEFORE_CALL)
    async def refuse(ctx: ModelBeforeCallContext) -> None:
        ctx.decline("Over the budget for today.")

    @hook(EVENT_MODEL_AFTER_CALL)
    async def watch(ctx: ModelAfterCallContext) -> None:
        observed.append(ctx)

    model_server.script(Text("never sent"))

    text = await run_turn(registry_of(refuse, watch), request_for(scripted_model, "hi"), storage_root, stream=stream)

    assert text == "Over the budget for today."
    assert model_server.requests == []
    assert [(ctx.round_trip, ctx.declined) for ctx in observed] == [(1, True)]


@pytest.mark.asyncio
async def test_model_hooks_failing_gate_fails_closed_when_marked_and_open_otherwise(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    def breaking(*, fail_closed: bool) -> Any:
        @hook(EVENT_MODEL_BEFORE_CALL, name="policy", fail_closed=fail_closed)
        async def policy(ctx: ModelBeforeCallContext) -> None:
            ctx.messages[-1]["content"] = "tampered"
            raise RuntimeError("policy server down")

        return policy

    model_server.script(Text("answered"))
    opened = registry_of(breaking(fail_closed=False))
    closed = registry_of(breaking(fail_closed=True), name="safety")

    assert await run_turn(opened, request_for(scripted_model, "hello"), storage_root, stream=False) == "answered"
    assert model_server.requests[0]["messages"][-1]["content"] == "hello"  # its change died with it
    text = await run_turn(closed, request_for(scripted_model, "again", session_id="t2"), storage_root, stream=False)

    assert text == "Model call blocked: safety check safety:policy failed."
    assert len(model_server.requests) == 1
    assert [row.failures for row in hook_telemetry(opened)] == [1]
    assert [(row.failures, row.declines) for row in hook_telemetry(closed)] == [(1, 1)]


@pytest.mark.asyncio
async def test_model_hooks_gate_cut_off_at_its_timeout_sends_the_request_unchanged(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    @hook(EVENT_MODEL_BEFORE_CALL, timeout_ms=50)
    async def slow(ctx: ModelBeforeCallContext) -> None:
        ctx.messages[-1]["content"] = "rewritten too late"
        await asyncio.sleep(10)

    model_server.script(Text("on time"))
    registry = registry_of(slow)

    assert await run_turn(registry, request_for(scripted_model, "hello"), storage_root, stream=False) == "on time"
    assert model_server.requests[0]["messages"][-1]["content"] == "hello"
    assert [row.timeouts for row in hook_telemetry(registry)] == [1]


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True])
async def test_model_hooks_after_call_observes_each_reply(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, stream: bool
) -> None:
    observed: list[ModelAfterCallContext] = []

    @hook(EVENT_MODEL_AFTER_CALL)
    async def watch(ctx: ModelAfterCallContext) -> None:
        observed.append(ctx)

    model_server.script(ToolCall("get_weather", {"city": "Oslo"}, call_id="call_9"), Stream(["Sunny", " there."]))
    request = request_for(scripted_model, "Weather in Oslo?", tools=(get_weather,))

    await run_turn(registry_of(watch), request, storage_root, stream=stream)

    assert [ctx.round_trip for ctx in observed] == [1, 2]
    first, second = observed
    assert [call["function"]["name"] for call in first.tool_calls] == ["get_weather"]
    assert first.tool_calls[0]["id"] == "call_9"
    assert (second.text, second.tool_calls, second.declined, second.error) == ("Sunny there.", [], False, None)
    assert all(ctx.latency_ms > 0 and ctx.agent_name == "helper" and ctx.room_id == ROOM for ctx in observed)
    assert all(ctx.model_id == "scripted-model" for ctx in observed)
    if not stream:  # the scripted server reports usage on whole replies
        assert second.usage.get("total_tokens", 0) > 0


@pytest.mark.asyncio
async def test_model_hooks_unbound_when_no_plugin_listens_for_the_agent(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    seen: list[Any] = []

    @hook(EVENT_MODEL_BEFORE_CALL, agents=["other"])
    async def elsewhere(ctx: ModelBeforeCallContext) -> None:
        seen.append(ctx)

    def probe() -> str:
        """Report whether model-call hooks are bound."""
        seen.append(model_call_hooks())
        return "ok"

    model_server.script(ToolCall("probe", {}), Text("done"))

    request = request_for(scripted_model, "go", tools=(probe,))
    await run_turn(registry_of(elsewhere), request, storage_root, stream=False)

    assert seen == [None]
