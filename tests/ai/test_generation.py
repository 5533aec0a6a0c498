"""Generation through agno's real OpenAI client against the scripted model server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mindroom.ai import (
    GenerationRequest,
    close_caches,
    generate,
    load_history,
    stream_generate,
)
from mindroom.config.main import ModelConfig
from mindroom.hooks.enrichment import ENRICHMENT_TAG, EnrichmentItem, append_enrichment
from mindroom.testing.model_server import (
    Delay,
    Echo,
    ScriptedModelServer,
    Stream,
    Text,
    ToolCall,
    last_user_message,
)

ENV: dict[str, str] = {}


def make_request(
    model: ModelConfig, message: str, *, session_id: str = "thread-1", **overrides: Any
) -> GenerationRequest:
    fields: dict[str, Any] = {
        "agent_name": "helper",
        "display_name": "Helper",
        "role": "Answers questions.",
        "instructions": ("Be brief.",),
        "model": model,
        "user_message": message,
        "session_id": session_id,
        "num_history_runs": 10,
        "markdown": True,
        "user_id": "@alice:localhost",
    }
    fields.update(overrides)
    return GenerationRequest(**fields)


def with_options(model: ModelConfig, **options: Any) -> ModelConfig:
    return model.model_copy(update={"extra_kwargs": {**model.extra_kwargs, **options}})


def roles_and_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(message["role"], message.get("content") or "") for message in request["messages"]]


async def collect(request: GenerationRequest, storage_root: Path) -> list[str]:
    return [delta async for delta in stream_generate(request, storage_root=storage_root, env=ENV)]


@pytest.mark.asyncio
async def test_generate_returns_scripted_text(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("Hello from the model."))

    result = await generate(make_request(scripted_model, "hi"), storage_root=storage_root, env=ENV)

    assert result.text == "Hello from the model."
    assert result.model_id == "scripted-model"
    request = model_server.requests[0]
    assert request["model"] == "scripted-model"
    assert not request.get("stream")
    assert last_user_message(request) == "hi"
    system = request["messages"][0]
    assert system["role"] == "system"
    assert "Answers questions." in system["content"]
    assert "Be brief." in system["content"]
    assert "Helper" in system["content"]


@pytest.mark.asyncio
async def test_stream_generate_yields_chunks_in_order(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Stream(["Once ", "upon ", "a ", "time."], delay_s=0.01))

    deltas = await collect(make_request(scripted_model, "tell a story"), storage_root)

    assert deltas == ["Once ", "upon ", "a ", "time."]
    assert model_server.requests[0]["stream"] is True
    assert await load_history("helper", "thread-1", storage_root=storage_root) == [
        ("user", "tell a story"),
        ("assistant", "Once upon a time."),
    ]


@pytest.mark.asyncio
async def test_generate_second_turn_sends_first_turn_as_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("Paris."), Stream(["About ", "2 million."]))

    await generate(make_request(scripted_model, "Capital of France?"), storage_root=storage_root, env=ENV)
    deltas = await collect(make_request(scripted_model, "Population?"), storage_root)

    assert "".join(deltas) == "About 2 million."
    second = roles_and_texts(model_server.requests[1])[1:]
    assert second == [("user", "Capital of France?"), ("assistant", "Paris."), ("user", "Population?")]


@pytest.mark.asyncio
async def test_generate_history_drops_enrichment_of_earlier_turns(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    first = append_enrichment("What should I wear?", [EnrichmentItem(key="weather", text="Rain, 12°C")])
    second = append_enrichment("And tomorrow?", [EnrichmentItem(key="weather", text="Sun, 20°C")])
    model_server.script(Text("A raincoat."), Text("Sunglasses."))

    await generate(make_request(scripted_model, first), storage_root=storage_root, env=ENV)
    await generate(make_request(scripted_model, second), storage_root=storage_root, env=ENV)

    current_turn = last_user_message(model_server.requests[0])
    assert ENRICHMENT_TAG in current_turn
    assert "Rain, 12°C" in current_turn
    history = roles_and_texts(model_server.requests[1])[1:]
    assert history[0] == ("user", "What should I wear?")
    assert ENRICHMENT_TAG in history[-1][1]
    assert "Sun, 20°C" in history[-1][1]
    assert await load_history("helper", "thread-1", storage_root=storage_root) == [
        ("user", "What should I wear?"),
        ("assistant", "A raincoat."),
        ("user", "And tomorrow?"),
        ("assistant", "Sunglasses."),
    ]


@pytest.mark.asyncio
async def test_stream_generate_history_drops_enrichment(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    message = append_enrichment("Status?", [EnrichmentItem(key="clock", text="09:00")])
    model_server.script(Stream(["All ", "good."]))

    await collect(make_request(scripted_model, message), storage_root)

    assert ENRICHMENT_TAG in last_user_message(model_server.requests[0])
    assert await load_history("helper", "thread-1", storage_root=storage_root) == [
        ("user", "Status?"),
        ("assistant", "All good."),
    ]


def test_generate_history_survives_restart(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model = ModelConfig(
        provider="openai", id="scripted-model", extra_kwargs={"base_url": model_server.base_url, "max_retries": 0}
    )
    model_server.script(Text("Noted: blue."), Text("Blue."))

    async def turn(message: str) -> str:
        try:
            result = await generate(make_request(model, message), storage_root=tmp_path, env=ENV)
        finally:
            await close_caches()
        return result.text

    asyncio.run(turn("My favourite colour is blue."))
    assert asyncio.run(turn("What is my favourite colour?")) == "Blue."

    history = roles_and_texts(model_server.requests[1])[1:]
    assert history == [
        ("user", "My favourite colour is blue."),
        ("assistant", "Noted: blue."),
        ("user", "What is my favourite colour?"),
    ]


@pytest.mark.asyncio
async def test_generate_other_session_has_no_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await generate(make_request(scripted_model, "first thread"), storage_root=storage_root, env=ENV)
    await generate(
        make_request(scripted_model, "second thread", session_id="thread-2"), storage_root=storage_root, env=ENV
    )

    assert roles_and_texts(model_server.requests[1])[1:] == [("user", "second thread")]


@pytest.mark.asyncio
async def test_generate_zero_history_runs_sends_no_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await generate(make_request(scripted_model, "one", num_history_runs=0), storage_root=storage_root, env=ENV)
    await generate(make_request(scripted_model, "two", num_history_runs=0), storage_root=storage_root, env=ENV)

    assert roles_and_texts(model_server.requests[1])[1:] == [("user", "two")]


@pytest.mark.asyncio
async def test_generate_runs_tool_calls(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    calls: list[str] = []

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        calls.append(city)
        return f"Sunny in {city}"

    model_server.script(ToolCall("get_weather", {"city": "Paris"}, call_id="call_weather"), Text("It is sunny."))

    result = await generate(
        make_request(scripted_model, "Weather in Paris?", tools=(get_weather,)), storage_root=storage_root, env=ENV
    )

    assert result.text == "It is sunny."
    assert calls == ["Paris"]
    first, second = model_server.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_weather"]
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_weather"
    assert tool_message["content"] == "Sunny in Paris"


@pytest.mark.asyncio
async def test_stream_generate_runs_streamed_tool_calls(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    calls: list[int] = []

    def add(a: int, b: int) -> str:
        """Add two numbers."""
        calls.append(a + b)
        return str(a + b)

    model_server.script(ToolCall("add", {"a": 2, "b": 40}), Stream(["The answer ", "is 42."]))

    deltas = await collect(make_request(scripted_model, "2 + 40?", tools=(add,)), storage_root)

    assert "".join(deltas) == "The answer is 42."
    assert calls == [42]
    assert model_server.requests[1]["messages"][-1]["content"] == "42"


@pytest.mark.asyncio
async def test_generate_offline_model_answers_deterministically(storage_root: Path) -> None:
    model = ModelConfig(provider="offline", id="offline")
    message = append_enrichment("ping", [EnrichmentItem(key="k", text="context")])

    first = await generate(make_request(model, message), storage_root=storage_root, env=ENV)
    deltas = await collect(make_request(model, "ping", session_id="thread-2"), storage_root)

    assert first.text == "(offline model) You said: ping"
    assert "".join(deltas) == first.text
    assert len(deltas) > 1
    assert await load_history("helper", "thread-1", storage_root=storage_root) == [
        ("user", "ping"),
        ("assistant", "(offline model) You said: ping"),
    ]


@pytest.mark.asyncio
async def test_generate_concurrent_turns_share_one_agent(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.set_default(Delay(0.05, Echo(prefix="re: ")))
    requests = [make_request(scripted_model, f"message {index}", session_id=f"thread-{index}") for index in range(4)]

    results = await asyncio.gather(*(generate(request, storage_root=storage_root, env=ENV) for request in requests))

    assert [result.text for result in results] == [f"re: message {index}" for index in range(4)]
    for index in range(4):
        history = await load_history("helper", f"thread-{index}", storage_root=storage_root)
        assert history == [("user", f"message {index}"), ("assistant", f"re: message {index}")]


@pytest.mark.asyncio
async def test_stream_generate_abandoned_stream_leaves_session_usable(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Stream(["one ", "two ", "three"], delay_s=0.05), Text("fresh answer"))
    stream = stream_generate(make_request(scripted_model, "count"), storage_root=storage_root, env=ENV)

    first = await anext(stream)
    await stream.aclose()

    assert first == "one "
    result = await generate(make_request(scripted_model, "again"), storage_root=storage_root, env=ENV)
    assert result.text == "fresh answer"
    assert await load_history("helper", "thread-1", storage_root=storage_root) == [
        ("user", "again"),
        ("assistant", "fresh answer"),
    ]
