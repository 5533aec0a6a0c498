"""The scripted OpenAI-compatible server, exercised with the real `openai` client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import openai
import pytest

from mindroom.testing import model_server as model_server_module
from mindroom.testing.model_server import (
    Delay,
    Echo,
    Hang,
    HttpError,
    ScriptedModelServer,
    Stream,
    Text,
    ToolCall,
    last_user_message,
)

pytest_plugins = ("mindroom.testing.model_server",)

USER = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
def client(model_server: ScriptedModelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=model_server.base_url, api_key="test", max_retries=0, timeout=60) as sync_client:
        yield sync_client


def ask(client: openai.OpenAI, content: str = "Hello there", model: str = "scripted") -> str | None:
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}])
    return reply.choices[0].message.content


def test_model_server_fixture_is_running(model_server: ScriptedModelServer) -> None:
    assert model_server.running
    assert model_server.base_url == f"http://127.0.0.1:{model_server.port}/v1"
    assert model_server.requests == []


def test_model_server_default_reply_echoes_last_user_message(client: openai.OpenAI) -> None:
    assert ask(client, "echo me") == "echo me"


def test_model_server_text_reply_non_streaming(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Text("Scripted answer."))

    reply = client.chat.completions.create(model="scripted", messages=USER)

    assert reply.choices[0].message.content == "Scripted answer."
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 2


def test_model_server_echo_prefix_and_content_parts(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.set_default(Echo(prefix="you said: "))

    reply = client.chat.completions.create(
        model="scripted",
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second "}, {"type": "text", "text": "part"}]},
        ],
    )

    assert reply.choices[0].message.content == "you said: second part"


def test_model_server_streams_chunks_in_order(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Stream(["Hel", "lo", " world"]))

    stream = client.chat.completions.create(
        model="scripted", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)

    deltas = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]
    assert deltas == ["Hel", "lo", " world"]
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None


def test_model_server_stream_without_usage_and_joined_when_not_streaming(
    model_server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    model_server.script(Stream(["a", "b"]), Stream(["c", "d"]))

    chunks = list(client.chat.completions.create(model="scripted", messages=USER, stream=True))

    assert all(chunk.usage is None for chunk in chunks)
    assert ask(client) == "cd"


def test_model_server_stream_delay_spaces_chunks(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Stream(["x", "y", "z"], delay_s=0.1))

    started = time.monotonic()
    arrivals = []
    for chunk in client.chat.completions.create(model="scripted", messages=USER, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.monotonic() - started)

    assert len(arrivals) == 3
    # Two delays come before the last chunk; a busy client can receive the first one late, not the last one early.
    assert arrivals[2] >= 0.18


def test_model_server_tool_call_non_streaming(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(ToolCall("get_weather", {"city": "Paris"}, call_id="call_abc"))

    reply = client.chat.completions.create(model="scripted", messages=USER)

    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.id == "call_abc"
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_model_server_tool_call_streaming(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    arguments = {"query": "a fairly long search query to split", "limit": 5}
    model_server.script(ToolCall("search", arguments))

    chunks = list(client.chat.completions.create(model="scripted", messages=USER, stream=True))

    pieces = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or []]
    assert pieces[0].id is not None
    assert pieces[0].id.startswith("call_")
    assert pieces[0].function is not None
    assert pieces[0].function.name == "search"
    assert len(pieces) > 2
    joined = "".join(piece.function.arguments or "" for piece in pieces if piece.function is not None)
    assert json.loads(joined) == arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_model_server_http_error(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(HttpError(503, "overloaded"))

    with pytest.raises(openai.APIStatusError) as caught:
        ask(client)

    assert caught.value.status_code == 503
    assert "overloaded" in caught.value.message
    assert ask(client, "next") == "next"


def test_model_server_delay_then_reply(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Delay(0.2, Text("late")))

    started = time.monotonic()
    assert ask(client) == "late"
    assert time.monotonic() - started >= 0.2


def test_model_server_hang_times_out_until_stopped(model_server: ScriptedModelServer) -> None:
    model_server.script(Hang())
    impatient = openai.OpenAI(base_url=model_server.base_url, api_key="test", max_retries=0, timeout=0.3)

    with pytest.raises(openai.APITimeoutError):
        ask(impatient)

    stopping = threading.Thread(target=model_server.stop)
    stopping.start()
    stopping.join(120)  # the hang never ends by itself: a stop that waited for it would never return
    assert not stopping.is_alive()


def test_model_server_queues_per_model_then_global(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Text("router says"), model="router-model")
    model_server.script(Text("global 1"), Text("global 2"))
    model_server.set_default(Text("router default"), model="router-model")

    assert ask(client, model="agent-model") == "global 1"
    assert ask(client, model="router-model") == "router says"
    assert ask(client, model="router-model") == "global 2"
    assert ask(client, model="router-model") == "router default"
    assert ask(client, "plain", model="agent-model") == "plain"


def test_model_server_rules_win_over_queues(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.when(lambda request: "weather" in last_user_message(request), Text("Sunny."))
    model_server.script(Text("queued"))

    assert ask(client, "weather today?") == "Sunny."
    assert ask(client, "something else") == "queued"
    assert ask(client, "weather tomorrow?") == "Sunny."


def test_model_server_records_requests(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    client.chat.completions.create(model="m1", messages=USER, temperature=0.5)

    [request] = model_server.requests
    assert request["model"] == "m1"
    assert request["temperature"] == 0.5
    assert last_user_message(request) == "Hello there"
    assert last_user_message({"messages": [{"role": "system", "content": "x"}]}) == ""


def test_model_server_wait_for_requests(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    worker = threading.Thread(target=lambda: [ask(client, f"m{index}") for index in range(3)])
    worker.start()

    requests = model_server.wait_for_requests(3)
    worker.join()

    assert [last_user_message(request) for request in requests] == ["m0", "m1", "m2"]
    with pytest.raises(TimeoutError, match="expected 4"):
        model_server.wait_for_requests(4, timeout=0.05)


def test_model_server_reset_clears_scripts_and_records(
    model_server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    model_server.script(Text("queued"))
    model_server.set_default(Text("default"))
    model_server.when(lambda _request: True, Text("rule"))
    ask(client)

    model_server.reset()

    assert model_server.requests == []
    assert ask(client, "fresh") == "fresh"


def test_model_server_lists_models(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    model_server.script(Text("x"), model="special")

    names = [model.id for model in client.models.list()]

    assert names == ["scripted", "special"]


def test_model_server_restarts_on_same_port(model_server: ScriptedModelServer, client: openai.OpenAI) -> None:
    port = model_server.port
    model_server.stop()

    with pytest.raises(openai.APIConnectionError):
        ask(client)

    model_server.start()
    assert model_server.port == port
    assert ask(client, "back") == "back"


@pytest.mark.asyncio
async def test_model_server_async_context_manager() -> None:
    async with ScriptedModelServer() as server:
        server.script(Stream(["as", "ync"]))
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as async_client:
            stream = await async_client.chat.completions.create(model="scripted", messages=USER, stream=True)
            deltas = [chunk.choices[0].delta.content async for chunk in stream if chunk.choices]
        requests = await server.wait_for_requests_async(1, timeout=1)
    assert "".join(delta or "" for delta in deltas) == "async"
    assert len(requests) == 1
    assert not server.running


def test_model_server_all_is_sorted() -> None:
    names = list(model_server_module.__all__)
    assert names == sorted(names, key=lambda name: (0 if name.isupper() else 1 if name[:1].isupper() else 2, name))
