"""Chat completions for a plain OpenAI-compatible client, sent over aiohttp instead of the openai SDK's machinery.

The SDK builds each request through several layers (options, headers, an httpx2 request, its auth hooks, the
response wrapper); that costs about 1.4 ms of CPU a call here, against 0.6 ms for the same POST over aiohttp with
the answer built into the same types. For a client that uses none of what those layers are for, this module sends
the same JSON with the same headers (its bearer key, then the client's own `default_headers`: organisation,
project, user agent and configured headers) to the same URL, and gives back what the SDK would: `ChatCompletion`
built as the SDK builds it (`construct`, no validation), an async iterator of `ChatCompletionChunk` for a stream,
and the SDK's own error classes with the SDK's messages (`APIConnectionError`, `APITimeoutError`, and the status
errors by code), so agno and our failure classification read them unchanged.

A client is sent this way only when it is exactly `openai.AsyncOpenAI` (not Azure's, whose URLs and auth differ),
with its retries off (ours are in `resilience`), no custom HTTP client, no query parameters or credentials in its
URL, no proxy in the environment, and none of the SDK's other auth schemes (workload identity, a key provider, a
provider runtime, custom auth). A call is, when its parameters are the model, the messages, `stream`,
`extra_body` and `extra_headers` and its body is plain JSON; anything else goes through the SDK as before.
`tests/ai/test_chat_transport.py` holds each outcome against the SDK's own on the same server (and is the
contract test CI runs against the SDK's newest release).

Connections are pooled per event loop; `close_chat_connections` closes the running loop's pool (the daemon's
stop calls it), and a loop closed without it closes its pool when it shuts down its async generators.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import aiohttp

__all__ = ["NOT_TAKEN", "ChatTransport", "ChunkStream", "close_chat_connections"]

NOT_TAKEN: Any = object()
"""What `ChatTransport.create` returns for a call it leaves to the SDK."""

_TAKEN_PARAMETERS = frozenset({"model", "messages", "stream", "extra_body", "extra_headers"})
# The SDK's auth schemes beyond a bearer key (attributes of `AsyncOpenAI`; `tests/ai/test_chat_transport.py`
# checks they still exist, so a release renaming one is seen rather than sent past).
_OTHER_AUTH = ("workload_identity", "_provider_runtime", "_api_key_provider")
_PROXIED_SCHEMES = frozenset({"http", "https", "all"})  # `<scheme>_proxy` variables, in either case


class ChatTransport:
    """How one SDK client's chat completions are sent: its URL, headers and timeouts, read once."""

    __slots__ = ("_headers", "_timeout", "_url")

    def __init__(self, url: str, headers: Mapping[str, str], timeout: aiohttp.ClientTimeout) -> None:
        self._url = url
        self._headers = dict(headers)
        self._timeout = timeout

    @classmethod
    def for_client(cls, client: Any, model: Any) -> ChatTransport | None:
        """The transport for `client` (made by agno for `model`), or None when the SDK must send its calls."""
        import openai

        if type(client) is not openai.AsyncOpenAI or getattr(model, "http_client", None) is not None:
            return None
        if "http_client" in (getattr(model, "client_params", None) or {}):
            return None
        if any(getattr(client, name, None) is not None for name in _OTHER_AUTH) or client.custom_auth is not None:
            return None
        if client.max_retries != 0 or client.default_query or getattr(client, "_strict_response_validation", False):
            return None
        base = client.base_url
        if base.scheme not in ("http", "https") or base.query or base.userinfo or _proxied():
            return None
        # As the SDK merges them: its bearer auth, then its default and configured headers (an `Omit` removes).
        auth = {"Authorization": f"Bearer {client.api_key}"} if client.api_key else {}
        headers = _merged(auth, client.default_headers)
        read = getattr(client.timeout, "read", client.timeout)
        headers["x-stainless-retry-count"] = "0"
        if read is not None:
            headers["x-stainless-read-timeout"] = str(read)
        return cls(f"{str(base).rstrip('/')}/chat/completions", headers, _timeout(client.timeout))

    async def create(self, kwargs: Mapping[str, Any]) -> Any:
        """`chat.completions.create(**kwargs)` as the SDK answers it, or `NOT_TAKEN` for the SDK to send."""
        if not kwargs.keys() <= _TAKEN_PARAMETERS or not isinstance(kwargs.get("model"), str):
            return NOT_TAKEN
        stream = kwargs.get("stream", False)
        extra_headers = kwargs.get("extra_headers") or {}
        if not isinstance(stream, bool) or not isinstance(extra_headers, Mapping):
            return NOT_TAKEN
        body: dict[str, Any] = {"messages": kwargs.get("messages", []), "model": kwargs["model"]}
        if "stream" in kwargs:
            body["stream"] = stream
        body.update(kwargs.get("extra_body") or {})
        try:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError):
            return NOT_TAKEN  # not plain JSON: the SDK knows how to write it
        headers = _merged(self._headers, extra_headers) if extra_headers else self._headers
        session = await _session()
        try:
            response = await session.post(self._url, data=data, headers=headers, timeout=self._timeout)
        except _TRANSPORT_ERRORS as error:
            raise _sdk_error(error, self._url) from error
        if stream and 200 <= response.status < 300:
            return ChunkStream(response, self._url)
        try:
            raw = await response.read()
        except _TRANSPORT_ERRORS as error:
            raise _sdk_error(error, self._url) from error
        finally:
            response.release()
        if not 200 <= response.status < 300:
            raise _status_error(response, raw, self._url)
        return _completion(raw, response, self._url)


class ChunkStream:
    """A streamed answer's `ChatCompletionChunk`s, read from its server-sent events as the SDK reads them."""

    def __init__(self, response: aiohttp.ClientResponse, url: str) -> None:
        self.response = response
        self._url = url
        self._iterator = self._chunks()

    def __aiter__(self) -> AsyncGenerator[Any]:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        """Stop reading; the connection is dropped unless the answer was read to its end."""
        await self._iterator.aclose()
        self.response.close()

    async def __aenter__(self) -> ChunkStream:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()

    async def _chunks(self) -> AsyncGenerator[Any]:
        from openai import APIError
        from openai.types.chat import ChatCompletionChunk

        finished = False
        try:
            async for data in self._events():
                if data.startswith("[DONE]"):
                    break
                parsed = json.loads(data)
                if isinstance(parsed, dict) and parsed.get("error"):  # the server's report of a failure mid-stream
                    error = parsed["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    if not isinstance(message, str) or not message:
                        message = "An error occurred during streaming"
                    raise APIError(message=message, request=_request(self._url), body=error)
                yield ChatCompletionChunk.construct(**parsed) if isinstance(parsed, dict) else parsed
            async for _rest in self.response.content.iter_any():
                pass  # read to the end, so the connection can carry the next request
            finished = True
        finally:
            if finished:
                self.response.release()
            else:
                self.response.close()

    async def _events(self) -> AsyncIterator[str]:
        """The data of each server-sent event that has some; lines may end in CR, LF or CRLF."""
        data: list[str] = []
        pending = b""
        try:
            async for piece in self.response.content.iter_any():
                lines = (pending + piece).splitlines(keepends=True)
                # A last line without its end waits for the next piece; so does one ending in CR (maybe CRLF).
                pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
                for raw in lines:
                    line = raw.rstrip(b"\r\n").decode()
                    if not line:
                        if data:
                            yield "\n".join(data)
                        data = []
                        continue
                    field, _, value = line.partition(":")
                    if field == "data":
                        data.append(value.removeprefix(" "))
        except _TRANSPORT_ERRORS as error:
            raise _sdk_error(error, self._url) from error
        tail = pending.rstrip(b"\r\n").decode()
        if tail.startswith("data:"):
            data.append(tail[5:].removeprefix(" "))
        if data:
            yield "\n".join(data)


_TRANSPORT_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def _sdk_error(error: BaseException, url: str) -> Exception:
    """The SDK's error for a request that failed on the way: a timeout, or a connection error."""
    import openai

    if isinstance(error, asyncio.TimeoutError):  # aiohttp's timeouts are TimeoutErrors too (and OSErrors)
        return openai.APITimeoutError(request=_request(url))
    return openai.APIConnectionError(request=_request(url))


def _merged(*sources: Mapping[str, Any]) -> dict[str, str]:
    """Headers merged case-insensitively, later sources winning; a value that is not text (`Omit`) removes."""
    merged: dict[str, tuple[str, str]] = {}
    for source in sources:
        for name, value in source.items():
            if isinstance(value, str):
                merged[name.lower()] = (name, value)
            else:
                merged.pop(name.lower(), None)
    return dict(merged.values())


def _timeout(value: Any) -> aiohttp.ClientTimeout:
    """aiohttp's timeouts for the SDK client's (a number, or httpx2's `Timeout`): to connect, and between reads."""
    if value is None:
        return aiohttp.ClientTimeout(total=None)
    if isinstance(value, int | float):
        return aiohttp.ClientTimeout(total=None, sock_connect=value, sock_read=value)
    return aiohttp.ClientTimeout(total=None, sock_connect=value.connect, sock_read=value.read)


def _proxied() -> bool:
    """A proxy in the environment (the SDK's httpx2 client follows it; this transport does not)."""
    from urllib.request import getproxies_environment

    return any(scheme in _PROXIED_SCHEMES for scheme in getproxies_environment())


def _request(url: str) -> Any:
    import httpx2

    return httpx2.Request("POST", url)


def _status_error(response: aiohttp.ClientResponse, raw: bytes, url: str) -> Exception:
    """The SDK's status error for an answer that is not a success, with the SDK's message and body."""
    import httpx2
    import openai

    sdk_response = httpx2.Response(
        response.status, headers=list(response.headers.items()), content=raw, request=_request(url)
    )
    text = raw.decode(errors="replace").strip()
    message = f"Error code: {response.status}"
    body: Any = text
    try:
        body = json.loads(text)
    except ValueError:
        pass  # the text is the body; the message stays the code
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    data = body.get("error", body) if isinstance(body, dict) else body
    kind = _STATUS_ERRORS.get(response.status) or ("InternalServerError" if response.status >= 500 else None)
    error_class = getattr(openai, kind) if kind else openai.APIStatusError
    return error_class(message, response=sdk_response, body=data)  # type: ignore[no-any-return]


_STATUS_ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def _completion(raw: bytes, response: aiohttp.ClientResponse, url: str) -> Any:
    """The answer's JSON built into the SDK's `ChatCompletion` (as the SDK builds it: no validation); JSON that
    is not an object is the SDK's `APIResponseValidationError`."""
    import httpx2
    import openai
    from openai.types.chat import ChatCompletion

    parsed = json.loads(raw)  # a body that is not JSON raises `JSONDecodeError`, as with the SDK
    if not isinstance(parsed, dict):
        sdk_response = httpx2.Response(response.status, content=raw, request=_request(url))
        raise openai.APIResponseValidationError(response=sdk_response, body=raw.decode(errors="replace"))
    return ChatCompletion.construct(**parsed)


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, AsyncGenerator[None]]]
_POOLS = weakref.WeakKeyDictionary()


async def _session() -> aiohttp.ClientSession:
    """The running loop's connection pool (made at its first call)."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is not None and not pool[0].closed:
        return pool[0]
    import httpx2

    # The SDK's httpx2 client trusts what `create_ssl_context` trusts (certifi, SSL_CERT_FILE/DIR): so does this.
    connector = aiohttp.TCPConnector(ssl=httpx2.create_ssl_context())
    session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))
    keeper = _closed_with_the_loop(session)
    await keeper.__anext__()  # registered with the loop: `shutdown_asyncgens` closes it, and the pool with it
    _POOLS[loop] = (session, keeper)
    return session


async def _closed_with_the_loop(session: aiohttp.ClientSession) -> AsyncGenerator[None]:
    loop = asyncio.get_running_loop()
    try:
        yield
    finally:
        if _POOLS.get(loop, (None,))[0] is session:
            del _POOLS[loop]  # the entry would keep the loop alive (the generator refers to it)
        await session.close()


async def close_chat_connections() -> None:
    """Close the running loop's pool (the next call opens a new one)."""
    pool = _POOLS.get(asyncio.get_running_loop())
    if pool is not None:
        await pool[1].aclose()
