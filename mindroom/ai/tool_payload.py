"""The tool schemas and messages of a request, sent as they are: what the openai SDK would do to them costs CPU.

The SDK walks every request's body against its typed parameters before sending it (`async_maybe_transform`).
For chat completions that walk changes nothing (the chat parameter types declare no renamed or reformatted
field, and agno builds plain JSON), yet it costs about a millisecond per request for ten tools, and grows
with every message of the history. The SDK leaves `extra_body` alone and merges it over the JSON it sends,
so the models built here move the request's `tools` (in `get_request_params`) and its `messages` (in the
client's `chat.completions.create`, which every agno chat class calls) there, leaving an empty `messages`
list for the walk: the bytes on the wire are the same, the walk over them is gone.

Only the chat completions classes (agno's `OpenAIChat` and its subclasses: OpenAI-compatible servers,
Azure, DeepSeek, OpenRouter, llama.cpp, ...) get this; the other providers' SDKs are left as they are.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, TypeVar, cast

from agno.models.base import Model

from mindroom.ai.chat_transport import NOT_TAKEN, ChatTransport

__all__ = ["sends_tools_verbatim", "verbatim_class"]

_ModelT = TypeVar("_ModelT", bound=Model)
_CHAT_COMPLETIONS = ("agno.models.openai.chat", "OpenAIChat")


def sends_tools_verbatim(model_class: type[Model]) -> bool:
    """True for agno's chat completions classes (checked by name: the openai SDK need not be imported)."""
    return any((base.__module__, base.__name__) == _CHAT_COMPLETIONS for base in model_class.__mro__)


class _ToolsInExtraBody(Model):
    """Mixed in front of an agno chat completions class: its request's tools go out through `extra_body`."""

    def get_request_params(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The class's own request parameters, with `tools` moved into `extra_body` (which wins, as it did)."""
        params: dict[str, Any] = super().get_request_params(*args, **kwargs)  # type: ignore[misc]
        tools = params.pop("tools", None)
        if tools is not None:
            params["extra_body"] = {"tools": tools, **(params.get("extra_body") or {})}
        return params

    def get_async_client(self) -> Any:
        """The class's own async client, seen through a view whose `chat.completions.create` sends the messages
        verbatim (one view per client, made again when agno makes a new client)."""
        client = super().get_async_client()  # type: ignore[misc]
        with _LOCK:
            view = _VIEWS.get(client)
            if view is None:
                view = _VIEWS[client] = _VerbatimClient(client, ChatTransport.for_client(client, self))
        return view


class _Delegate:
    """Everything not overridden is the wrapped object's own."""

    def __init__(self, wrapped: Any) -> None:
        self._wrapped = wrapped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)


_KEPT_BY_THE_SDK = frozenset({"model", "stream", "extra_headers", "extra_query", "extra_body", "timeout"})
_PLAIN_JSON = (list, dict, str, int, float, bool)


class _VerbatimCompletions(_Delegate):
    def __init__(self, wrapped: Any, transport: ChatTransport | None) -> None:
        super().__init__(wrapped)
        self._transport = transport

    async def create(self, **kwargs: Any) -> Any:
        """The SDK's `create`, the body's plain JSON values (the messages first) moved into `extra_body`.

        What the SDK reads itself stays: `model`, `stream` (it decides how the answer is read), the request
        options, and any value that is not plain JSON (the walk turns such values into JSON). A configured
        `extra_body` still wins over the moved values, as it did over the parameters."""
        sent: dict[str, Any] = {}
        for name, value in list(kwargs.items()):
            if name not in _KEPT_BY_THE_SDK and isinstance(value, _PLAIN_JSON):
                sent[name] = kwargs.pop(name)
        if sent:
            kwargs["extra_body"] = {**sent, **(kwargs.get("extra_body") or {})}
            if "messages" in sent:
                kwargs["messages"] = []
        if self._transport is not None:
            answer = await self._transport.create(kwargs)
            if answer is not NOT_TAKEN:
                return answer
        return await self._wrapped.create(**kwargs)


class _VerbatimChat(_Delegate):
    def __init__(self, wrapped: Any, transport: ChatTransport | None) -> None:
        super().__init__(wrapped)
        self._transport = transport

    @property
    def completions(self) -> _VerbatimCompletions:
        """The chat completions resource, sending messages verbatim."""
        return _VerbatimCompletions(self._wrapped.completions, self._transport)


class _VerbatimClient(_Delegate):
    """An openai client (`AsyncOpenAI`, `AsyncAzureOpenAI`, ...) whose chat completions send messages verbatim,
    through `chat_transport` when the client is one it can send for."""

    def __init__(self, wrapped: Any, transport: ChatTransport | None) -> None:
        super().__init__(wrapped)
        self._transport = transport

    @property
    def chat(self) -> _VerbatimChat:
        """The chat resource, sending messages verbatim."""
        return _VerbatimChat(self._wrapped.chat, self._transport)


_VIEWS: weakref.WeakKeyDictionary[Any, _VerbatimClient] = weakref.WeakKeyDictionary()
_CLASSES: dict[type[Model], type[Model]] = {}
_LOCK = threading.Lock()


def verbatim_class(model_class: type[_ModelT]) -> type[_ModelT]:
    """`model_class` itself, or for a chat completions class a subclass that sends its tools verbatim."""
    if not sends_tools_verbatim(model_class):
        return model_class
    with _LOCK:
        subclass = _CLASSES.get(model_class)
        if subclass is None:
            namespace = {"__module__": __name__, "__doc__": model_class.__doc__, "__qualname__": model_class.__name__}
            subclass = type(model_class.__name__, (_ToolsInExtraBody, model_class), namespace)
            _CLASSES[model_class] = subclass
    return cast("type[_ModelT]", subclass)
