"""What configured tools and the history cost per turn: tool schemas and messages go out as built (the openai
SDK does not walk them) and agno's per-run copies of our tools are cheap, with the same content and isolation as
agno's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agno.tools.function import Function

from mindroom.ai import GenerationRequest, generate, stream_generate
from mindroom.ai.chat_transport import ChatTransport
from mindroom.ai.models import build_model
from mindroom.ai.tool_payload import sends_tools_verbatim, verbatim_class
from mindroom.ai.tools import agno_function, agno_tools
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import ScriptedModelServer, Stream, Text, ToolCall
from mindroom.tool_system.spec import ToolSpec
from tests.ai.test_generation import ENV, make_request

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "Where."}, "days": {"type": "integer"}},
    "required": ["city"],
}


async def _forecast(city: str, days: int = 1) -> str:
    return f"sun in {city} for {days} days"


def _specs() -> tuple[ToolSpec, ...]:
    return (
        ToolSpec("forecast", _forecast, description="The weather ahead.", parameters=SCHEMA),
        ToolSpec("echo", _echo, description="Say it back.", parameters={"type": "object", "properties": {}}),
    )


async def _echo() -> str:
    return "echo"


async def _answer(request: GenerationRequest, storage_root: Path, streamed: bool) -> str:
    """The answer's text, from `stream_generate` when `streamed`, else from `generate`."""
    if streamed:
        return "".join([delta async for delta in stream_generate(request, storage_root=storage_root, env=ENV)])
    return (await generate(request, storage_root=storage_root, env=ENV)).text


@pytest.fixture
def transformed(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The bodies the openai SDK walks before sending a chat completion (recorded, then walked as usual); the
    SDK sends every call (`chat_transport` would send these itself: the path kept for the clients it leaves)."""
    from openai.resources.chat.completions import completions

    monkeypatch.setattr(ChatTransport, "for_client", classmethod(lambda cls, client, model: None))

    seen: list[dict[str, Any]] = []
    walk = completions.async_maybe_transform

    async def recording(data: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(dict(data))
        return await walk(data, *args, **kwargs)

    monkeypatch.setattr(completions, "async_maybe_transform", recording)
    return seen


@pytest.mark.asyncio
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_tool_payload_schemas_and_messages_reach_the_model_as_built_and_the_sdk_does_not_walk_them(
    model_server: ScriptedModelServer,
    scripted_model: ModelConfig,
    storage_root: Path,
    transformed: list[dict[str, Any]],
    streamed: bool,
) -> None:
    tools = agno_tools(_specs(), "helper")
    model_server.script(
        ToolCall("forecast", {"city": "Oslo", "days": 2}), Stream(["done"]) if streamed else Text("done")
    )
    request = make_request(scripted_model, "weather?", tools=tools, num_history_runs=0)

    assert await _answer(request, storage_root, streamed) == "done"
    first, second = model_server.requests
    expected = sorted(
        ({"type": "function", "function": tool.to_dict()} for tool in tools), key=lambda t: t["function"]["name"]
    )
    assert first["tools"] == second["tools"] == expected
    assert second["messages"][-1]["content"] == "sun in Oslo for 2 days"
    assert len(transformed) == 2 and all(not isinstance(body["tools"], list) for body in transformed)  # omitted
    assert all(body["messages"] == [] for body in transformed)  # the walk sees no message
    assert [m["role"] for m in first["messages"]] == ["system", "user"] and first["messages"][-1]["content"] == (
        "weather?"
    )
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "forecast"
    assert all(body["model"] for body in transformed)  # the rest of the body is walked as before


@pytest.mark.asyncio
async def test_tool_payload_keeps_a_configured_extra_body(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model = scripted_model.model_copy(
        update={"extra_kwargs": {**scripted_model.extra_kwargs, "extra_body": {"top_k": 5}}}
    )
    model_server.script(Text("ok"))

    await generate(make_request(model, "hi", tools=agno_tools(_specs(), "helper")), storage_root=storage_root, env=ENV)

    [sent] = model_server.requests
    assert sent["top_k"] == 5 and [tool["function"]["name"] for tool in sent["tools"]] == ["echo", "forecast"]


@pytest.mark.asyncio
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_tool_payload_the_sdk_walks_only_what_it_reads_itself(
    model_server: ScriptedModelServer,
    scripted_model: ModelConfig,
    storage_root: Path,
    transformed: list[dict[str, Any]],
    streamed: bool,
) -> None:
    model = scripted_model.model_copy(update={"temperature": 0.3})
    model_server.script(Stream(["ok"]) if streamed else Text("ok"))
    request = make_request(model, "hi", num_history_runs=0)

    assert await _answer(request, storage_root, streamed) == "ok"

    [sent] = model_server.requests
    assert sent["temperature"] == 0.3 and sent["messages"][-1]["content"] == "hi"
    [walked] = transformed
    given = {name for name, value in walked.items() if type(value).__name__ not in {"Omit", "NotGiven"}}
    assert given == ({"model", "messages", "stream"} if streamed else {"model", "messages"})
    assert walked["messages"] == []


def test_tool_payload_only_chat_completions_classes_send_tools_verbatim() -> None:
    from agno.models.anthropic import Claude
    from agno.models.openai import OpenAIChat, OpenAILike, OpenAIResponses

    assert sends_tools_verbatim(OpenAIChat) and sends_tools_verbatim(OpenAILike)
    assert not sends_tools_verbatim(OpenAIResponses) and not sends_tools_verbatim(Claude)
    assert verbatim_class(Claude) is Claude and verbatim_class(OpenAIChat) is verbatim_class(OpenAIChat)
    built = build_model(ModelConfig(provider="openai", id="gpt-x"), env={"OPENAI_API_KEY": "sk-test"})
    assert isinstance(built, OpenAIChat) and type(built).__name__ == "OpenAIChat"
    params = built.get_request_params(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
    assert "tools" not in params and params["extra_body"] == {
        "tools": [{"type": "function", "function": {"name": "f"}}]
    }
    assert params["tool_choice"] == "auto"
    assert "extra_body" not in built.get_request_params()


def test_tool_payload_per_run_copy_matches_agnos_own_and_shares_nothing_it_writes() -> None:
    template = agno_function(_specs()[0], "helper")
    template._agent = object()  # left by an earlier run on the template: no copy may start with it

    ours, agnos = template._per_run_copy(), Function._per_run_copy(template)

    assert type(ours) is type(template) and ours is not template
    assert ours.model_dump() == agnos.model_dump()
    assert ours.__pydantic_private__ == {**agnos.__pydantic_private__, "_framework_params": set()}
    ours._run_context = "run 1"  # type: ignore[assignment]
    ours._framework_params.add("x")  # type: ignore[union-attr]
    other = template._per_run_copy()
    assert other._run_context is None and other._framework_params == set()
    assert template._run_context is None


def test_tool_payload_strict_mode_on_a_copy_leaves_the_shared_schema_alone() -> None:
    template = agno_function(_specs()[0], "helper")
    before = template.to_dict()["parameters"]

    strict = template._per_run_copy()
    strict.process_entrypoint(strict=True)
    plain = template._per_run_copy()
    plain.process_entrypoint()

    assert strict.parameters["additionalProperties"] is False and strict.parameters["required"] == ["city", "days"]
    assert template.parameters == plain.parameters == before == SCHEMA
