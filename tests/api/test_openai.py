"""`/v1` with the official `openai` client against the app served over real bots, wiring and stores."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai import APIStatusError, AsyncOpenAI

from mindroom import ai
from mindroom.hooks import (
    EVENT_MESSAGE_AFTER_RESPONSE,
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EnrichmentItem,
    ResponseUsage,
    hook,
)
from mindroom.testing.model_api import word_count
from mindroom.testing.model_api_openai import ChatCompletionsApi
from mindroom.testing.model_server import Delay, Echo, HttpError, ScriptedModelServer, Stream, Text
from tests.bots.bench import registry_of, until

pytestmark = pytest.mark.asyncio

KEY = "sk-test-key-1"
HELPER = {"display_name": "Helper", "role": "Answers questions"}
KEYED = {"OPENAI_COMPAT_API_KEYS": f"{KEY}, sk-other-key-2"}


def openai_client(api, key: str = KEY) -> AsyncOpenAI:
    return api.openai(key)


def user_texts(model_server: ScriptedModelServer) -> list[str]:
    """The last user message of each request the model got."""
    found = []
    for request in model_server.requests:
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        found.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content))
    return found


async def test_v1_models_lists_auto_then_each_agent(make_api):
    api = await make_api({"helper": HELPER, "writer": {"display_name": "Writer"}}, env=KEYED)

    models = await openai_client(api).models.list()

    assert [model.id for model in models.data] == ["auto", "helper", "writer"]
    helper = models.data[1].model_dump()
    assert helper["owned_by"] == "mindroom" and helper["name"] == "Helper"
    assert helper["description"] == "Answers questions"
    assert helper["created"] == int(api.view.config_path.stat().st_mtime)


async def test_v1_completion_answers_with_the_agents_model_and_counts_tokens(make_api, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    api = await make_api({"helper": HELPER}, env=KEYED)

    answer = await openai_client(api).chat.completions.create(
        model="helper",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
    )

    assert answer.model == "helper"
    assert answer.id.startswith("chatcmpl-") and len(answer.id) == len("chatcmpl-") + 12
    assert answer.choices[0].message.content == "echo: Be brief.\n\nhello there"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.prompt_tokens > 0
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert api.bench.client("helper").messages == []  # nothing went to Matrix
    assert api.bench.daemon.stores.journal.pending("helper") == []


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_v1_usage_is_what_the_model_reported_and_after_response_sees_it(make_api, model_server, stream):
    seen: list[Any] = []

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def after(ctx):
        seen.append(ctx.result.usage)

    model_server.set_cached_tokens(2)
    model_server.set_default(Stream(["four ", "words ", "are ", "here"]) if stream else Text("four words are here"))
    api = await make_api({"helper": HELPER}, env=KEYED, registry=registry_of(after))
    body = {"model": "helper", "messages": [{"role": "user", "content": "count"}], "stream": stream}

    response = await api.client(KEY).post("/v1/chat/completions", json=body)
    await until(lambda: seen)

    [request] = model_server.requests
    read = word_count(ChatCompletionsApi().texts(request))
    assert seen == [ResponseUsage(read, 4, 2, "agent-model")]
    assert api.bench.bots["helper"].metrics.tokens == {"agent-model": (read, 4, 2)}
    assert response.status_code == 200
    if not stream:  # cached input is counted in the prompt tokens; a stream sends no usage chunk
        usage = response.json()["usage"]
        assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (read, 4, read + 4)


async def test_v1_stream_sends_role_content_stop_and_done(make_api, model_server):
    model_server.set_default(Stream(["Hel", "lo ", "world"], delay_s=0.01))
    api = await make_api({"helper": HELPER}, env=KEYED)
    body = {"model": "helper", "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    async with api.client(KEY) as client, client.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line async for line in response.aiter_lines() if line]

    assert response.headers["content-type"].startswith("text/event-stream")
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "Hello world"
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and {c["model"] for c in chunks} == {"helper"}


async def test_v1_stream_through_the_openai_client(make_api, model_server):
    model_server.set_default(Stream(["one ", "two"]))
    api = await make_api({"helper": HELPER}, env=KEYED)

    stream = await openai_client(api).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "count"}], stream=True
    )
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])

    assert text == "one two"


async def test_v1_session_header_keeps_history_in_the_state_and_keys_do_not_share_it(make_api, model_server):
    model_server.set_default(Echo(prefix="echo: "))
    api = await make_api({"helper": HELPER}, env=KEYED)
    client, other = openai_client(api), openai_client(api, "sk-other-key-2")
    headers = {"X-Session-Id": "chat-1"}

    await client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "my name is Ada"}], extra_headers=headers
    )
    await client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "what is my name"}], extra_headers=headers
    )
    await other.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "who am I"}], extra_headers=headers
    )

    second, third = model_server.requests[1], model_server.requests[2]
    assert "my name is Ada" in json.dumps(second["messages"])  # the stored first turn is history
    assert "my name is Ada" not in json.dumps(third["messages"])  # another key, another session


async def test_v1_without_a_session_the_clients_messages_are_the_history(make_api, model_server):
    model_server.set_default(Echo())
    api = await make_api({"helper": HELPER}, env=KEYED)

    await openai_client(api).chat.completions.create(
        model="helper",
        messages=[
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "tool", "content": "dropped"},
            {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url"}]},
        ],
    )

    [prompt] = user_texts(model_server)
    assert prompt.endswith("user: first question\nassistant: first answer\n\nsecond")
    assert "dropped" not in prompt


class TurnGauge:
    """Counts the `/v1` answers being made (from `message:enrich`, in the turn's slot, to `message:after_response`)
    and their peak."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.both_in = asyncio.Event()

    def registry(self, *, wait_for_two: bool = False) -> Any:
        @hook(EVENT_MESSAGE_ENRICH, timeout_ms=60_000)
        async def began(ctx: Any) -> None:  # with `wait_for_two`: no answer goes on until two are being made
            self.now += 1
            self.peak = max(self.peak, self.now)
            if self.now >= 2:
                self.both_in.set()
            if wait_for_two:
                await self.both_in.wait()

        @hook(EVENT_MESSAGE_AFTER_RESPONSE)
        async def ended(ctx: Any) -> None:
            self.now -= 1

        return registry_of(began, ended)


async def test_v1_requests_of_one_session_are_serialized(make_api, model_server):
    model_server.set_default(Delay(0.4, Text("done")))
    gauge = TurnGauge()
    api = await make_api({"helper": HELPER}, env=KEYED, registry=gauge.registry())
    client = openai_client(api)

    async def ask() -> None:
        await client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Session-Id": "s"}
        )

    await asyncio.gather(ask(), ask())

    assert gauge.peak == 1  # one after the other


async def test_v1_requests_of_two_sessions_run_side_by_side(make_api, model_server):
    model_server.set_default(Text("done"))
    gauge = TurnGauge()
    api = await make_api({"helper": HELPER}, env=KEYED, registry=gauge.registry(wait_for_two=True))
    client = openai_client(api)

    async def ask(session: str) -> None:
        await client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Session-Id": session}
        )

    # Each turn waits (up to its hook's minute) until both are under way: only turns side by side get past it.
    await asyncio.gather(ask("a"), ask("b"))

    assert gauge.peak == 2 and gauge.both_in.is_set()


async def test_v1_turn_runs_the_message_hooks_with_source_kind_api(make_api, model_server):
    seen: list[tuple[str, str, str]] = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def received(ctx):
        seen.append((EVENT_MESSAGE_RECEIVED, ctx.envelope.source_kind, ctx.envelope.room_id))

    @hook(EVENT_MESSAGE_ENRICH)
    async def enrich(ctx):
        seen.append((EVENT_MESSAGE_ENRICH, ctx.envelope.source_kind, ctx.target_entity_name))
        return [EnrichmentItem(key="weather", text="It is sunny.")]

    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def rewrite(ctx):
        ctx.draft.response_text = ctx.draft.response_text.upper()

    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def after(ctx):
        seen.append((EVENT_MESSAGE_AFTER_RESPONSE, ctx.envelope.source_kind, ctx.result.response_text))

    model_server.set_default(Text("fine"))
    api = await make_api({"helper": HELPER}, env=KEYED, registry=registry_of(received, enrich, rewrite, after))

    answer = await openai_client(api).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "how is it"}]
    )
    await until(lambda: len(seen) == 3 and api.bench.daemon.turns.recent())

    assert answer.choices[0].message.content == "FINE"
    assert seen == [
        (EVENT_MESSAGE_RECEIVED, "api", "api"),
        (EVENT_MESSAGE_ENRICH, "api", "helper"),
        (EVENT_MESSAGE_AFTER_RESPONSE, "api", "FINE"),
    ]
    assert "It is sunny." in json.dumps(model_server.requests[0]["messages"])
    [turn] = api.bench.daemon.turns.recent()
    assert (turn.agent, turn.source_kind, turn.outcome) == ("helper", "api", "answered")
    assert turn.hooks == ("bench:received", "bench:enrich", "bench:rewrite", "bench:after")


async def test_v1_turn_hides_the_tools_that_need_a_matrix_room(make_api, model_server):
    model_server.set_default(Text("ok"))
    api = await make_api({"helper": {**HELPER, "tools": ["matrix", "attachments", "calculator"]}}, env=KEYED)

    await openai_client(api).chat.completions.create(model="helper", messages=[{"role": "user", "content": "2+2"}])

    tools = {tool["function"]["name"] for tool in model_server.requests[0].get("tools", [])}
    assert tools == {"calculate"}


async def test_v1_auto_routes_to_an_agent_and_names_it(make_api, model_server):
    model_server.when(lambda request: request.get("model") == "router-model", Text("writer"))
    model_server.set_default(Text("written"))
    api = await make_api(
        {"helper": HELPER, "writer": {"display_name": "Writer", "role": "Writes"}},
        env=KEYED,
        models={
            "router-model": {
                "provider": "openai",
                "id": "router-model",
                "extra_kwargs": {"base_url": model_server.base_url, "max_retries": 0},
            }
        },
        router={"model": "router-model"},
    )

    answer = await openai_client(api).chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "write me a poem"}]
    )

    assert answer.model == "writer"
    assert answer.choices[0].message.content == "written"


@pytest.mark.parametrize(
    ("room_key", "chosen"),
    [
        pytest.param("api", "writer", id="the-api-room"),
        pytest.param("apis", "helper", id="a-key-with-a-suffix"),
        pytest.param("lobby", "helper", id="a-matrix-room"),
    ],
)
async def test_v1_auto_routes_with_the_router_model_room_models_give_the_api_room(
    make_api, model_server, room_key, chosen
):
    def router_model(name: str) -> dict[str, Any]:
        return {"provider": "openai", "id": name, "extra_kwargs": {"base_url": model_server.base_url, "max_retries": 0}}

    model_server.when(lambda request: request.get("model") == "router-model", Text("helper"))
    model_server.when(lambda request: request.get("model") == "api-model", Text("writer"))
    model_server.set_default(Text("written"))
    api = await make_api(
        {"helper": HELPER, "writer": {"display_name": "Writer", "role": "Writes"}},
        env=KEYED,
        models={"router-model": router_model("router-model"), "api-model": router_model("api-model")},
        router={"model": "router-model"},
        room_models={room_key: "api-model"},
    )

    answer = await openai_client(api).chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "write me a poem"}]
    )

    assert answer.model == chosen
    expected = "api-model" if room_key == "api" else "router-model"
    assert model_server.requests[0]["model"] == expected  # the router's choice, as a room's router makes it


async def _status(call) -> tuple[int, dict[str, Any]]:
    try:
        await call
    except APIStatusError as error:
        return error.status_code, error.body  # type: ignore[return-value]
    raise AssertionError("the request succeeded")


async def test_v1_errors_follow_the_catalogue(make_api, model_server):
    api = await make_api({"helper": HELPER}, env=KEYED)
    client = openai_client(api)
    user = [{"role": "user", "content": "hi"}]

    unknown = await _status(client.chat.completions.create(model="nobody", messages=user))
    team = await _status(client.chat.completions.create(model="team/crew", messages=user))
    empty = await _status(client.chat.completions.create(model="helper", messages=[]))
    no_user = await _status(
        client.chat.completions.create(model="helper", messages=[{"role": "system", "content": "x"}])
    )
    wrong_key = await _status(openai_client(api, "sk-wrong").chat.completions.create(model="helper", messages=user))
    async with api.client(KEY) as raw:
        bad_json = await raw.post(
            "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
        )
        not_object = await raw.post("/v1/chat/completions", json=[1, 2])
        utf16 = await raw.post(
            "/v1/chat/completions", content=json.dumps({"model": "nobody", "messages": user}).encode("utf-16")
        )
        missing = await raw.post(
            "/v1/chat/completions", json={"model": "helper", "messages": user}, headers={"Authorization": ""}
        )

    assert unknown == (
        404,
        {
            "message": "Model 'nobody' not found",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        },
    )
    assert team[0] == 404 and team[1]["message"] == "Team 'crew' not found"
    assert empty[0] == 400 and empty[1]["message"] == "Messages array is required and must not be empty"
    assert no_user[0] == 400 and no_user[1]["message"] == "No user message content found in messages"
    assert (
        wrong_key[0] == 401
        and wrong_key[1]["code"] == "invalid_api_key"
        and wrong_key[1]["message"] == "Invalid API key"
    )
    assert bad_json.status_code == 400 and bad_json.json()["error"]["message"] == "Invalid request body"
    assert not_object.status_code == 400
    assert utf16.status_code == 404  # decoded (UTF-16 with its BOM), then the model is unknown
    assert (
        missing.status_code == 401 and missing.json()["error"]["message"] == "Missing or invalid Authorization header"
    )
    assert model_server.requests == []  # no error reached the model


async def test_v1_without_keys_is_closed_unless_opened_and_then_checks_host_and_origin(make_api, model_server):
    model_server.set_default(Text("ok"))
    closed = await make_api({"helper": HELPER})
    async with closed.client() as client:
        refused = await client.get("/v1/models")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "OpenAI-compatible API keys are not configured"

    await closed.close()
    opened = await make_api({"helper": HELPER}, env={"OPENAI_COMPAT_ALLOW_UNAUTHENTICATED": "true"})
    async with opened.client() as client:
        local = await client.get("/v1/models")
        rebound = await client.get("/v1/models", headers={"Host": "attacker.example"})
        cross = await client.get("/v1/models", headers={"Origin": "https://attacker.example"})
        same = await client.get("/v1/models", headers={"Origin": opened.url})

    assert local.status_code == 200
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "permission_denied"
    assert "attacker.example" in rebound.json()["error"]["message"]
    assert cross.status_code == 403 and "Cross-site" in cross.json()["error"]["message"]
    assert same.status_code == 200


async def test_v1_model_failure_is_a_server_error_whole_and_streamed(make_api, model_server):
    model_server.set_default(HttpError(500, "upstream broke"))
    api = await make_api({"helper": HELPER}, env=KEYED)
    client = openai_client(api)
    user = [{"role": "user", "content": "hi"}]

    whole = await _status(client.chat.completions.create(model="helper", messages=user))
    streamed = await _status(client.chat.completions.create(model="helper", messages=user, stream=True))

    assert whole == (500, {"message": "Agent execution failed", "type": "server_error", "param": None, "code": None})
    assert streamed[0] == 500 and streamed[1]["message"] == "Agent execution failed"
    assert api.bench.daemon.stores.journal.pending("helper") == []
    assert [turn.outcome for turn in api.bench.daemon.turns.recent()] != ["answered", "answered"]


async def test_v1_client_leaving_mid_stream_stops_the_turn_and_stores_nothing(make_api, model_server, tmp_path):
    model_server.set_default(Stream(["first ", "second ", "third"], delay_s=1.0))
    api = await make_api({"helper": HELPER}, env=KEYED)
    body = {"model": "helper", "stream": True, "messages": [{"role": "user", "content": "tell me"}]}

    async with (
        api.client(KEY) as client,
        client.stream("POST", "/v1/chat/completions", json=body, headers={"X-Session-Id": "gone"}) as response,
    ):
        async for line in response.aiter_lines():
            if "first" in line:
                break  # leaving with the answer half told
    await until(lambda: not api.ctx.turns.running, timeout_s=10)

    daemon = api.bench.daemon
    [turn] = daemon.turns.recent()
    assert (turn.agent, turn.source_kind, turn.outcome) == ("helper", "api", "cancelled")  # noted as the API's
    stored = await ai.session_exists(
        "helper", f"{_namespace(KEY)}:gone", storage_root=daemon.paths.storage_root, database_url=None
    )
    assert stored is False
    assert daemon.stores.journal.pending("helper") == []


def _namespace(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()


async def test_v1_rate_limit_and_body_cap(make_api, model_server):
    model_server.set_default(Text("ok"))
    api = await make_api({"helper": HELPER}, env={**KEYED, "OPENAI_COMPAT_RATE_LIMIT": "4"})
    async with api.client(KEY) as client:
        huge = await client.post("/v1/chat/completions", content=b"x" * (16 * 1024 * 1024 + 1))
        answers = [
            (
                await client.post(
                    "/v1/chat/completions", json={"model": "helper", "messages": [{"role": "user", "content": "x"}]}
                )
            ).status_code
            for _ in range(3)
        ]

    assert huge.status_code == 413 and huge.json()["error"]["message"] == "Request body too large"
    assert answers[0] == 200 and answers[-1] == 429  # a burst of a quarter of the minute's budget, then wait
    assert model_server.requests.__len__() == 1


async def test_v1_a_stream_outlasting_the_body_timeout_is_not_cut_and_a_stalled_body_is(make_api, model_server):
    import dataclasses

    from mindroom.api.settings import api_settings

    model_server.set_default(Stream(["slow ", "but ", "whole"], delay_s=0.5))
    settings = dataclasses.replace(api_settings(KEYED, port=0), body_timeout_s=0.3)
    api = await make_api({"helper": HELPER}, settings=settings)

    stream = await openai_client(api).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "take your time"}], stream=True
    )
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])

    async def trickle():
        yield b'{"model": "helper", '
        await asyncio.sleep(1.0)
        yield b'"messages": []}'

    async with api.client(KEY) as client:
        stalled = await client.post("/v1/chat/completions", content=trickle())

    assert text == "slow but whole"
    assert stalled.status_code == 408
