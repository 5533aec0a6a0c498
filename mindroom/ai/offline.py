"""A deterministic agno model that needs no network: it repeats the user's words (for demos and smoke tests)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from mindroom.hooks.enrichment import strip_enrichment_blocks

__all__ = ["OFFLINE_PREFIX", "OfflineModel", "offline_answer"]

OFFLINE_PREFIX = "(offline model) "
_PIECES = re.compile(r"\S+\s*|\s+")


def offline_answer(messages: Sequence[Message]) -> str:
    """The offline model's answer to a conversation: the last user turn, without enrichment."""
    for message in reversed(messages):
        if message.role == "user":
            text = strip_enrichment_blocks(message.get_content_string()).strip()
            return f"{OFFLINE_PREFIX}You said: {text}"
    return f"{OFFLINE_PREFIX}There is nothing to answer."


@dataclass
class OfflineModel(Model):
    """An agno model that answers "(offline model) You said: <text>", streamed word by word."""

    id: str = "offline"
    name: str = "Offline"
    provider: str = "Offline"

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        """The whole answer at once."""
        return ModelResponse(role=self.assistant_message_role, content=offline_answer(messages))

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        """The whole answer at once."""
        return self.invoke(messages)

    def invoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        """The answer word by word."""
        for index, piece in enumerate(_PIECES.findall(offline_answer(messages))):
            yield ModelResponse(role=self.assistant_message_role if index == 0 else None, content=piece)

    async def ainvoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        """The answer word by word."""
        for response in self.invoke_stream(messages):
            yield response

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response if isinstance(response, ModelResponse) else ModelResponse(content=str(response))

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return self._parse_provider_response(response)
