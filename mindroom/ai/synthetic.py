"""`provider: synthetic`: a model that needs no network and writes seeded filler text at a set pace.

For load tests and demos of streaming: the same seed and the same conversation give the same answer, and
the answer arrives `chunk_chars` at a time at `chars_per_second`.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

__all__ = ["SyntheticModel", "synthetic_text"]

_WORDS = (
    *("signal", "river", "lantern", "orbit", "quiet", "meadow", "copper", "harbor", "cinder", "violet"),
    *("maple", "summit", "ember", "ripple", "granite", "willow", "beacon", "prism", "tundra", "canyon"),
)


def synthetic_text(seed: int, conversation: str, length: int) -> str:
    """`length` characters of filler words, fixed by `seed` and the conversation's text."""
    digest = hashlib.sha256(f"{seed}\0{conversation}".encode()).digest()
    rng = random.Random(digest)  # reproducible filler, not a secret
    words: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)[:length].rstrip()
    return text[:1].upper() + text[1:] + "."


@dataclass
class SyntheticModel(Model):
    """Seeded filler text, streamed `chunk_chars` at a time at `chars_per_second`."""

    id: str = "synthetic"
    name: str = "Synthetic"
    provider: str = "Synthetic"
    seed: int = 1
    min_response_chars: int = 320
    max_response_chars: int = 960
    chunk_chars: int = 40
    chars_per_second: float = 80.0

    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[no-untyped-call]
        if not 2 <= self.min_response_chars <= self.max_response_chars:
            msg = "min_response_chars must be at least 2 and at most max_response_chars"
            raise ValueError(msg)
        if self.chunk_chars < 1 or self.chars_per_second <= 0:
            msg = "chunk_chars must be at least 1 and chars_per_second more than 0"
            raise ValueError(msg)

    def _answer(self, messages: list[Message]) -> str:
        conversation = "\n".join(m.get_content_string() for m in messages if m.role == "user")
        rng = random.Random(f"{self.seed}:{len(conversation)}")  # reproducible, not a secret
        length = rng.randint(self.min_response_chars, self.max_response_chars)
        return synthetic_text(self.seed, conversation, length)

    def _chunks(self, messages: list[Message]) -> Iterator[str]:
        text = self._answer(messages)
        for start in range(0, len(text), self.chunk_chars):
            yield text[start : start + self.chunk_chars]

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        """The whole answer at once."""
        return ModelResponse(role=self.assistant_message_role, content=self._answer(messages))

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        """The whole answer, after the time streaming it would take."""
        answer = self._answer(messages)
        await asyncio.sleep(len(answer) / self.chars_per_second)
        return ModelResponse(role=self.assistant_message_role, content=answer)

    def invoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        """The answer chunk by chunk, at the set pace."""
        for index, chunk in enumerate(self._chunks(messages)):
            time.sleep(len(chunk) / self.chars_per_second)
            yield ModelResponse(role=self.assistant_message_role if index == 0 else None, content=chunk)

    async def ainvoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        """The answer chunk by chunk, at the set pace."""
        for index, chunk in enumerate(self._chunks(messages)):
            await asyncio.sleep(len(chunk) / self.chars_per_second)
            yield ModelResponse(role=self.assistant_message_role if index == 0 else None, content=chunk)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response if isinstance(response, ModelResponse) else ModelResponse(content=str(response))

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return self._parse_provider_response(response)
