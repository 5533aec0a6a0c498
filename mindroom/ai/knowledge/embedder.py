"""The embedder knowledge bases use for vectors: `memory.embedder`, reached through an OpenAI-compatible endpoint.

Without `memory.embedder` (or when it names no endpoint this machine can use) there is none, and bases are
searched by words alone. `openai` uses `config.host` (any OpenAI-compatible server) and a key from
`config.api_key`, `EMBEDDER_API_KEY` or `OPENAI_API_KEY`; `ollama` its server's OpenAI-compatible `/v1`
(`OLLAMA_HOST` wins over `config.host`). Providers that need model weights on this machine
(`huggingface`, `sentence_transformers`) are not offered: the base falls back to words, with a warning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mindroom.config.memory import MemoryEmbedderConfig
from mindroom.logging_config import get_logger, register_secret_values

__all__ = ["Embedder", "EmbedderSpec", "embedder_spec"]

logger = get_logger(__name__)

_OLLAMA_DEFAULT = "http://localhost:11434"
_NO_KEY = "no-key"  # local OpenAI-compatible servers take any key; the client refuses to start without one
_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class EmbedderSpec:
    """A usable embedder: model, endpoint, key, width, and the prefixes put before queries and documents."""

    model: str
    base_url: str | None
    api_key: str
    dimensions: int | None
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    def fingerprint(self) -> str:
        """What decides the vectors (not the key): a change means every chunk is embedded again."""
        facts = [self.model, self.base_url, self.dimensions, self.query_prefix, self.document_prefix]
        return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:16]


def embedder_spec(config: MemoryEmbedderConfig | None, env: Mapping[str, str]) -> EmbedderSpec | None:
    """The embedder `memory.embedder` names, if this machine can reach one; None: search by words only."""
    if config is None:
        return None
    settings = config.config
    if config.provider == "ollama":
        host = (env.get("OLLAMA_HOST") or settings.host or _OLLAMA_DEFAULT).rstrip("/")
        return EmbedderSpec(settings.model, f"{host}/v1", _NO_KEY, None)
    if config.provider != "openai":
        logger.warning("embedder provider not offered: knowledge is searched by words", provider=config.provider)
        return None
    key = settings.api_key or env.get("EMBEDDER_API_KEY") or env.get("OPENAI_API_KEY")
    if not key and not settings.host:
        logger.warning("no key for the openai embedder: knowledge is searched by words")
        return None
    register_secret_values([key])
    return EmbedderSpec(
        settings.model,
        settings.host.rstrip("/") if settings.host else None,
        key or _NO_KEY,
        settings.dimensions,
        settings.query_prefix or "",
        settings.document_prefix or "",
    )


class Embedder:
    """agno's `OpenAIEmbedder` for one spec: documents in batches, queries one at a time."""

    def __init__(self, spec: EmbedderSpec) -> None:
        from agno.knowledge.embedder.openai import OpenAIEmbedder

        self.spec = spec
        options: dict[str, Any] = {"id": spec.model, "api_key": spec.api_key, "base_url": spec.base_url}
        if spec.dimensions is not None:
            options["dimensions"] = spec.dimensions
        self._agno = OpenAIEmbedder(**options, client_params={"max_retries": 1, "timeout": _TIMEOUT_S})

    async def documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Vectors of document chunks, in order; `EmbeddingError` (agno's) when the endpoint fails."""
        from agno.exceptions import EmbeddingError

        prefixed = [self.spec.document_prefix + text for text in texts]
        # The first text alone: an endpoint that is down fails here once, not once per text of a batch.
        first, _usage = await self._agno.async_get_embedding_and_usage(prefixed[0])
        vectors, _usages = (
            await self._agno.async_get_embeddings_batch_and_usage(prefixed[1:]) if len(prefixed) > 1 else ([], [])
        )
        found = [tuple(first), *(tuple(vector) for vector in vectors)]
        if len(found) != len(texts) or not all(found):
            raise EmbeddingError("the embedder returned fewer vectors than texts")
        return found

    async def query(self, text: str) -> tuple[float, ...]:
        """The vector of a search query."""
        vector, _usage = await self._agno.async_get_embedding_and_usage(self.spec.query_prefix + text)
        return tuple(vector)

    async def close(self) -> None:
        """Close the HTTP client."""
        client = self._agno.async_client
        if client is not None:
            await client.close()
