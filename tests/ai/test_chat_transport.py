"""`chat_transport` against the openai SDK itself: the same server on loopback answers both, and each outcome
(what reaches the server, the answer built, a stream's chunks, each error) must be the SDK's. CI also runs this
file against the SDK's newest release (the contract of what the transport leans on)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio
from aiohttp import web

from mindroom.ai import chat_transport
from mindroom.ai.chat_transport import NOT_TAKEN, ChatTransport, close_chat_connections

PLAIN_MODEL = SimpleNamespace(http_client=None, client_params=None)
MESSAGES = [{"role": "system", "content": "Be brief. ✓"}, {"role": "user", "content": "hi"}]
# Set by the transport of the connection (aiohttp and httpx2 word them differently), not by the SDK's request.
TRANSPORT_HEADERS = {"host", "content-length", "accept-encoding", "connection"}


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    pieces: list[bytes] | None = None  # sent one by one, flushed each time (a stream)
    delay_s: float = 0.0


@dataclass
class Server:
    url: str
    replies: list[Canned]
    seen: list[tuple[dict[str, str], Any]]


def completion(**extra: Any) -> bytes:
    message = {"role": "assistant", "content": "pong", **extra}
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        "system_fingerprint": None,
    }
    return json.dumps(body).encode()


def sse(*events: dict[str, Any] | str, newline: bytes = b"\n") -> list[bytes]:
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        out.append(b"data: " + data.encode() + newline + newline)
    return out


def chunk(content: str | None = None, usage: dict[str, int] | None = None, **delta: Any) -> dict[str, Any]:
    choices = [] if usage else [{"index": 0, "delta": {"content": content, **delta}, "finish_reason": None}]
    head = {"id": "s1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return {**head, "choices": choices, "usage": usage}


@pytest_asyncio.fixture
async def server() -> AsyncIterator[Server]:
    replies: list[Canned] = []
    seen: list[tuple[dict[str, str], Any]] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        seen.append(({k.lower(): v for k, v in request.headers.items()}, json.loads(await request.read())))
        canned = replies.pop(0) if replies else Canned(body=completion())
        await asyncio.sleep(canned.delay_s)
        if canned.pieces is None:
            return web.Response(status=canned.status, body=canned.body, headers=canned.headers)
        response = web.StreamResponse(status=canned.status, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in canned.pieces:
            await response.write(piece)
            await asyncio.sleep(0)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield Server(f"http://127.0.0.1:{port}/v1", replies, seen)
    finally:
        await close_chat_connections()
        await runner.cleanup()


def client(url: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(**{"api_key": "sk-test", "base_url": url, "max_retries": 0, **options})


async def both(server: Server, canned: list[Canned], **kwargs: Any) -> tuple[Any, Any]:
    """The SDK's outcome and the transport's for the same call and the same replies: a value or the error."""
    sdk = client(server.url, organization="org-1", default_headers={"X-Team": "blue"})
    transport = ChatTransport.for_client(sdk, PLAIN_MODEL)
    assert transport is not None
    outcomes = []
    for send in (lambda: sdk.chat.completions.create(**kwargs), lambda: transport.create(kwargs)):
        server.replies[:] = [Canned(**vars(c)) for c in canned]
        try:
            answer = await send()
            if kwargs.get("stream"):
                answer = [item async for item in answer]
            outcomes.append(answer)
        except Exception as error:
            outcomes.append(error)
    await sdk.close()
    return outcomes[0], outcomes[1]


def dumped(answer: Any) -> Any:
    if isinstance(answer, list):
        return [dumped(item) for item in answer]
    return answer.model_dump()


@pytest.mark.asyncio
async def test_chat_transport_sends_what_the_sdk_sends(server: Server) -> None:
    kwargs = {"model": "m", "messages": [], "extra_body": {"messages": MESSAGES, "temperature": 0.2}}
    sdk_answer, ours = await both(server, [Canned(body=completion())], **kwargs)

    (sdk_headers, sdk_body), (our_headers, our_body) = server.seen
    assert our_body == sdk_body == {"messages": MESSAGES, "model": "m", "temperature": 0.2}
    drop = TRANSPORT_HEADERS
    assert {k: v for k, v in our_headers.items() if k not in drop} == {
        k: v for k, v in sdk_headers.items() if k not in drop
    }
    assert our_headers["authorization"] == "Bearer sk-test" and our_headers["x-team"] == "blue"
    assert our_headers["openai-organization"] == "org-1"
    assert type(ours) is type(sdk_answer) and dumped(ours) == dumped(sdk_answer)


@pytest.mark.asyncio
async def test_chat_transport_answers_as_the_sdk_builds_them(server: Server) -> None:
    calls = [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    for body in (
        completion(),
        completion(tool_calls=calls, content=None),
        completion(reasoning_content="thought"),  # a field the SDK's type does not declare
        json.dumps({"id": "x", "choices": []}).encode(),  # fields missing: built anyway, as the SDK builds it
    ):
        sdk_answer, ours = await both(server, [Canned(body=body)], model="m", messages=MESSAGES)
        assert dumped(ours) == dumped(sdk_answer)
    assert getattr(ours, "choices", None) == []
    headers = {"Content-Type": "application/json"}
    sdk_error, our_error = await both(server, [Canned(body=b"not json", headers=headers)], model="m", messages=MESSAGES)
    assert type(our_error) is type(sdk_error), (sdk_error, our_error)


@pytest.mark.asyncio
@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
async def test_chat_transport_streams_the_sdks_chunks(server: Server, newline: bytes) -> None:
    calls = [{"index": 0, "id": "t1", "type": "function", "function": {"name": "f", "arguments": ""}}]
    events = sse(
        chunk("po"),
        chunk("ng ✓"),
        chunk(None, tool_calls=calls),
        chunk(usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
        "[DONE]",
        newline=newline,
    )
    whole = b"".join(events)
    split = [whole[i : i + 7] for i in range(0, len(whole), 7)]  # lines and CRLFs cut across reads
    for pieces in (events, split):
        sdk_answer, ours = await both(server, [Canned(pieces=pieces)], model="m", messages=MESSAGES, stream=True)
        assert isinstance(sdk_answer, list) and len(sdk_answer) == 4
        assert dumped(ours) == dumped(sdk_answer)
        assert [type(item) for item in ours] == [type(item) for item in sdk_answer]
    assert server.seen[-1][1]["stream"] is True


@pytest.mark.asyncio
async def test_chat_transport_a_stream_reporting_an_error_raises_the_sdks_error(server: Server) -> None:
    pieces = sse(chunk("par"), {"error": {"message": "the model broke", "code": "server_error"}})
    sdk_error, ours = await both(server, [Canned(pieces=pieces)], model="m", messages=MESSAGES, stream=True)

    assert type(ours) is type(sdk_error) is openai.APIError
    assert str(ours) == str(sdk_error) and ours.body == sdk_error.body


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 418, 422, 429, 500, 503])
@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": {"message": "nope", "code": "context_length_exceeded"}}).encode(),
        b"plain words",
        b"",
    ],
    ids=["json", "text", "empty"],
)
async def test_chat_transport_status_errors_are_the_sdks(server: Server, status: int, body: bytes) -> None:
    canned = Canned(status=status, body=body, headers={"Retry-After": "7"})
    sdk_error, ours = await both(server, [canned], model="m", messages=MESSAGES)

    assert type(ours) is type(sdk_error) and isinstance(ours, openai.APIStatusError)
    assert str(ours) == str(sdk_error) and ours.body == sdk_error.body and ours.status_code == status
    assert ours.response.headers["retry-after"] == sdk_error.response.headers["retry-after"] == "7"
    assert ours.response.content == sdk_error.response.content == body


@pytest.mark.asyncio
async def test_chat_transport_refused_connection_and_timeout_are_the_sdks(server: Server) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    refused = client(f"http://127.0.0.1:{closed_port}/v1")
    transport = ChatTransport.for_client(refused, PLAIN_MODEL)
    assert transport is not None
    kwargs = {"model": "m", "messages": MESSAGES}
    with pytest.raises(openai.APIConnectionError) as sdk_refused:
        await refused.chat.completions.create(**kwargs)
    with pytest.raises(openai.APIConnectionError) as our_refused:
        await transport.create(kwargs)
    assert type(our_refused.value) is type(sdk_refused.value) and str(our_refused.value) == str(sdk_refused.value)

    slow = client(server.url, timeout=0.3)
    transport = ChatTransport.for_client(slow, PLAIN_MODEL)
    assert transport is not None
    for send in (lambda: slow.chat.completions.create(**kwargs), lambda: transport.create(kwargs)):
        server.replies[:] = [Canned(body=completion(), delay_s=1.5)]
        with pytest.raises(openai.APITimeoutError):
            await send()
    await slow.close()
    await refused.close()


@pytest.mark.asyncio
async def test_chat_transport_leaves_to_the_sdk_what_it_does_not_do(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = client(server.url)
    assert ChatTransport.for_client(plain, PLAIN_MODEL) is not None
    # The SDK's other auth schemes: the attributes it keeps them in must still exist (a rename would hide them).
    for name in chat_transport._OTHER_AUTH:
        assert hasattr(plain, name), name
    azure = openai.AsyncAzureOpenAI(api_key="k", azure_endpoint="https://a.example", api_version="2024-10-21")
    refused_clients = [
        azure,
        client(server.url, max_retries=2),
        client(server.url, default_query={"key": "v"}),
        client(server.url + "?key=v"),
        client(server.url.replace("http://", "http://user:pw@")),
    ]
    for other in refused_clients:
        assert ChatTransport.for_client(other, PLAIN_MODEL) is None
    assert ChatTransport.for_client(plain, SimpleNamespace(http_client=object(), client_params=None)) is None
    assert ChatTransport.for_client(plain, SimpleNamespace(http_client=None, client_params={"http_client": 1})) is None
    for variable in ("HTTPS_PROXY", "http_proxy", "all_proxy"):  # either case, any scheme the SDK follows
        monkeypatch.setenv(variable, "http://proxy.example:3128")
        assert ChatTransport.for_client(plain, PLAIN_MODEL) is None, variable
        monkeypatch.delenv(variable)
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # names no proxy: the transport still sends
    assert ChatTransport.for_client(plain, PLAIN_MODEL) is not None

    transport = ChatTransport.for_client(plain, PLAIN_MODEL)
    assert transport is not None
    for kwargs in (
        {"model": "m", "messages": MESSAGES, "timeout": 5},  # a parameter it does not send
        {"model": "m", "messages": [{"role": "user", "content": object()}]},  # not plain JSON
        {"model": "m", "messages": MESSAGES, "stream": "yes"},
    ):
        assert await transport.create(kwargs) is NOT_TAKEN
    assert server.seen == []
    await plain.close()


def test_chat_transport_pool_closes_with_its_loop_or_when_asked() -> None:
    sessions: list[aiohttp.ClientSession] = []

    async def use() -> None:
        sessions.append(await chat_transport._session())
        assert await chat_transport._session() is sessions[-1]

    asyncio.run(use())  # ended without `close_chat_connections`: the loop's shutdown closes the pool
    assert sessions[0].closed and not chat_transport._POOLS

    async def use_and_close() -> None:
        await use()
        await close_chat_connections()
        assert sessions[-1].closed
        assert await chat_transport._session() is not sessions[-1]  # a new pool after
        await close_chat_connections()

    asyncio.run(use_and_close())
    assert not chat_transport._POOLS


@pytest.mark.asyncio
async def test_chat_transport_a_stream_left_early_frees_its_connection(server: Server) -> None:
    sdk = client(server.url)
    transport = ChatTransport.for_client(sdk, PLAIN_MODEL)
    assert transport is not None
    kwargs = {"model": "m", "messages": MESSAGES, "stream": True}
    server.replies[:] = [Canned(pieces=sse(chunk("a"), chunk("b"), chunk("c"), "[DONE]")), Canned(body=completion())]

    stream = await transport.create(kwargs)
    first = await stream.__anext__()
    await stream.close()
    later = await transport.create({"model": "m", "messages": MESSAGES})

    assert first.choices[0].delta.content == "a" and stream.response.closed
    assert later.choices[0].message.content == "pong"
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()
    await sdk.close()
