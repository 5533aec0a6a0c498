"""The scripted server's other wire protocols, exercised with each provider's real client: Anthropic's Messages
API, Ollama's chat API and OpenAI's Responses API (plus errors, context overflow and stalls)."""

from __future__ import annotations

import time

import anthropic
import httpx
import ollama
import openai
import pytest

from mindroom.testing.model_server import (
    ContextOverflow,
    HttpError,
    ScriptedModelServer,
    Stall,
    Stream,
    Text,
    ToolCall,
    last_user_message,
)

pytest_plugins = ("mindroom.testing.model_server",)

TOOL = {"name": "add", "description": "Add.", "input_schema": {"type": "object", "properties": {}}}


@pytest.fixture
def claude(model_server: ScriptedModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=model_server.url, api_key="k", max_retries=0, timeout=5)


@pytest.fixture
def llama(model_server: ScriptedModelServer) -> ollama.Client:
    return ollama.Client(host=model_server.url, timeout=5)


@pytest.fixture
def responses(model_server: ScriptedModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=model_server.base_url, api_key="k", max_retries=0, timeout=5)


def test_model_server_anthropic_text_with_usage_and_cache(model_server, claude):
    model_server.set_cached_tokens(2)
    model_server.script(Text("Bonjour tout le monde"))

    message = claude.messages.create(
        model="claude-x", max_tokens=50, system="be kind", messages=[{"role": "user", "content": "say hi please"}]
    )

    assert [block.text for block in message.content] == ["Bonjour tout le monde"]
    assert message.stop_reason == "end_turn"
    # 5 words in (2 from the cache, which Anthropic counts apart), 4 words out
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens, message.usage.output_tokens) == (3, 2, 4)
    (request,) = model_server.requests_to("anthropic")
    assert last_user_message(request) == "say hi please"


def test_model_server_anthropic_streams_text_and_tool_calls(model_server, claude):
    model_server.script(Stream(["Hel", "lo"]), ToolCall("add", {"a": 1, "b": 2}, call_id="toolu_1"))
    messages = [{"role": "user", "content": "hi"}]

    with claude.messages.stream(model="claude-x", max_tokens=50, messages=messages) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    with claude.messages.stream(model="claude-x", max_tokens=50, messages=messages, tools=[TOOL]) as stream:
        called = stream.get_final_message()

    assert pieces == ["Hel", "lo"] and final.content[0].text == "Hello"
    assert called.stop_reason == "tool_use"
    block = called.content[0]
    assert (block.name, block.input, block.id) == ("add", {"a": 1, "b": 2}, "toolu_1")


def test_model_server_anthropic_errors_and_overflow(model_server, claude):
    model_server.script(HttpError(429, "slow down", retry_after_s=7), ContextOverflow())
    messages = [{"role": "user", "content": "hi"}]

    with pytest.raises(anthropic.RateLimitError) as limited:
        claude.messages.create(model="claude-x", max_tokens=5, messages=messages)
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        claude.messages.create(model="claude-x", max_tokens=5, messages=messages)

    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body["error"]["type"] == "rate_limit_error"


def test_model_server_ollama_chat_stream_and_tool_call(model_server, llama):
    model_server.script(Text("one two"), Stream(["a", "b", "c"]), ToolCall("add", {"a": 1}))
    messages = [{"role": "user", "content": "hello ollama"}]

    whole = llama.chat(model="llama-x", messages=messages, stream=False)
    streamed = [part.message.content for part in llama.chat(model="llama-x", messages=messages, stream=True)]
    called = llama.chat(model="llama-x", messages=messages, stream=False)

    assert whole.message.content == "one two" and whole.done
    assert (whole.prompt_eval_count, whole.eval_count) == (2, 2)
    assert streamed == ["a", "b", "c", ""]
    assert called.message.tool_calls[0].function.name == "add"
    assert called.message.tool_calls[0].function.arguments == {"a": 1}
    assert [r["stream"] for r in model_server.requests_to("ollama")] == [False, True, False]


def test_model_server_ollama_error_is_a_response_error(model_server, llama):
    model_server.script(HttpError(404, 'model "nope" not found'))

    with pytest.raises(ollama.ResponseError) as caught:
        llama.chat(model="nope", messages=[{"role": "user", "content": "x"}], stream=False)

    assert caught.value.status_code == 404 and "not found" in caught.value.error


def test_model_server_responses_text_stream_and_function_call(model_server, responses):
    model_server.set_cached_tokens(1)
    model_server.script(Text("plain answer"), Stream(["x", "y"]), ToolCall("add", {"a": 5}, call_id="call_9"))

    whole = responses.responses.create(model="gpt-x", input="what now", instructions="be brief")
    events = list(responses.responses.create(model="gpt-x", input=[{"role": "user", "content": "go"}], stream=True))
    called = responses.responses.create(model="gpt-x", input="call it")

    assert whole.output_text == "plain answer"
    assert whole.usage is not None and (whole.usage.input_tokens, whole.usage.output_tokens) == (4, 2)
    assert whole.usage.input_tokens_details.cached_tokens == 1
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert deltas == ["x", "y"] and events[-1].type == "response.completed"
    assert events[-1].response.output_text == "xy"
    (call,) = called.output
    assert (call.type, call.name, call.arguments, call.call_id) == ("function_call", "add", '{"a": 5}', "call_9")


def test_model_server_responses_context_overflow(model_server, responses):
    model_server.script(ContextOverflow())

    with pytest.raises(openai.BadRequestError) as caught:
        responses.responses.create(model="gpt-x", input="long story")

    assert caught.value.code == "context_length_exceeded"


def test_model_server_stall_goes_silent_after_its_chunks(model_server):
    model_server.script(Stall(["first"], seconds=0.5))
    client = openai.OpenAI(base_url=model_server.base_url, api_key="k", max_retries=0, timeout=5)
    started = time.monotonic()
    received = []

    def read() -> None:
        messages = [{"role": "user", "content": "hi"}]
        for chunk in client.chat.completions.create(model="m", messages=messages, stream=True):
            received.extend(choice.delta.content for choice in chunk.choices if choice.delta.content)

    with pytest.raises((openai.APIError, httpx.HTTPError)):
        read()

    assert received == ["first"]
    assert time.monotonic() - started >= 0.5
