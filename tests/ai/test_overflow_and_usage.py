"""A turn too long for the model folds its history and tries once more; every turn reports its token usage."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.ai import GenerationError, TokenUsage, generate, generate_early, stream_generate
from mindroom.config.main import ModelConfig
from mindroom.testing.model_api import word_count
from mindroom.testing.model_api_anthropic import AnthropicMessagesApi
from mindroom.testing.model_api_openai import ChatCompletionsApi
from mindroom.testing.model_server import ContextOverflow, ScriptedModelServer, Stream, Text, ToolCall
from tests.ai.test_generation import ENV, collect, make_request

pytestmark = pytest.mark.asyncio

LONG = "word " * 400


async def _history(model_server: ScriptedModelServer, model: ModelConfig, storage_root: Path, turns: int) -> None:
    for index in range(turns):
        model_server.script(Text(f"answer {index} " + LONG))
        await generate(make_request(model, f"question {index} " + LONG), storage_root=storage_root, env=ENV)
    model_server.reset()


async def test_generate_context_overflow_folds_history_and_retries_once(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await _history(model_server, scripted_model, storage_root, 3)
    model_server.script(ContextOverflow(), Text("the summary so far"), Text("fits now"))

    result = await generate(make_request(scripted_model, "and now?"), storage_root=storage_root, env=ENV)

    assert result.text == "fits now"
    refused, summarise, retried = model_server.requests
    assert "question 0" in str(summarise["messages"])  # the oldest turns went to the summariser
    assert len(retried["messages"]) < len(refused["messages"])
    assert any("the summary so far" in str(message.get("content")) for message in retried["messages"])


async def test_stream_context_overflow_folds_history_and_retries_once(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await _history(model_server, scripted_model, storage_root, 3)
    model_server.script(ContextOverflow(), Text("summary"), Stream(["streamed ", "after folding"]))

    deltas = await collect(make_request(scripted_model, "and now?"), storage_root)

    assert "".join(deltas) == "streamed after folding"
    assert len(model_server.requests) == 3


async def test_context_overflow_without_history_is_a_clear_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(ContextOverflow(), Text("never reached"))

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(scripted_model, "a very long message"), storage_root=storage_root, env=ENV)

    assert caught.value.kind == "context_overflow"
    assert str(caught.value) == "The conversation is too long for this model, even after shortening its history."
    assert len(model_server.requests) == 1


async def test_context_overflow_twice_is_retried_only_once(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await _history(model_server, scripted_model, storage_root, 3)
    model_server.script(ContextOverflow(), Text("summary"), ContextOverflow(), Text("never reached"))

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(scripted_model, "and now?"), storage_root=storage_root, env=ENV)

    assert caught.value.kind == "context_overflow"
    assert len(model_server.requests) == 3


async def test_context_overflow_uses_the_callers_shortener(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await _history(model_server, scripted_model, storage_root, 2)
    budgets: list[int] = []

    async def shorten(budget: int) -> bool:
        budgets.append(budget)
        return True

    model_server.script(ContextOverflow(), Text("second try"))
    request = make_request(scripted_model.model_copy(update={"context_window": 100}), "more", shorten_history=shorten)

    result = await generate(request, storage_root=storage_root, env=ENV)

    assert result.text == "second try"
    assert budgets == [50]  # half the context window, which is smaller than half the history


def _chat_tokens(request: dict) -> int:
    return word_count(ChatCompletionsApi().texts(request))


async def test_generate_reports_input_output_and_cached_tokens_over_tool_calls(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    model_server.set_cached_tokens(3)
    model_server.script(ToolCall("add", {"a": 1, "b": 2}), Text("three it is"))

    result = await generate(make_request(scripted_model, "add", tools=(add,)), storage_root=storage_root, env=ENV)

    first, second = model_server.requests
    assert result.usage == TokenUsage(_chat_tokens(first) + _chat_tokens(second), 3, 6)
    assert result.usage.total_tokens == result.usage.input_tokens + 3


async def test_stream_and_early_answers_report_usage(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    seen: list[TokenUsage] = []
    model_server.script(Stream(["one ", "two"]), Text("four five six"))

    deltas = [
        delta
        async for delta in stream_generate(
            make_request(scripted_model, "count"), storage_root=storage_root, env=ENV, on_usage=seen.append
        )
    ]
    early = await generate_early(make_request(scripted_model, "more"), storage_root=storage_root, env=ENV)
    await early.stored()

    streamed, whole = model_server.requests
    assert "".join(deltas) == "one two"
    assert seen == [TokenUsage(_chat_tokens(streamed), 2, 0)]
    assert early.usage == TokenUsage(_chat_tokens(whole), 3, 0)


async def test_anthropic_usage_counts_cached_input_as_input(
    model_server: ScriptedModelServer, storage_root: Path
) -> None:
    model = ModelConfig(provider="anthropic", id="claude-x", host=model_server.url, api_key="k")
    model_server.set_cached_tokens(4)
    model_server.script(Text("fine thanks"))

    result = await generate(make_request(model, "how are you"), storage_root=storage_root, env=ENV)

    (request,) = model_server.requests_to("anthropic")
    assert result.usage == TokenUsage(word_count(AnthropicMessagesApi().texts(request)), 2, 4)
