"""The tool schemas of a request, sent as they are: what the openai SDK would do to them costs CPU on every call.

The SDK walks every request's body against its typed parameters before sending it (`async_maybe_transform`).
For chat completions that walk changes nothing in the tool schemas (plain JSON built by agno), yet it costs
about a millisecond per request for ten tools, more than the whole body otherwise. The SDK leaves
`extra_body` alone and merges it into the JSON it sends, so the models built here move the `tools` of the
request there: the bytes on the wire are the same, the walk over them is gone.

Only the chat completions classes (agno's `OpenAIChat` and its subclasses: OpenAI-compatible servers,
Azure, DeepSeek, OpenRouter, llama.cpp, ...) get this; the other providers' SDKs are left as they are.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar, cast

from agno.models.base import Model

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
