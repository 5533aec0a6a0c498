"""MindRoom's `knowledge_reranker`: the knowledge search's hits reordered by a reranking model.

One request per search to a Cohere-format `/rerank` endpoint (`{model, query, documents, top_n}` in,
`{results: [{index, relevance_score}]}` out): Cohere's own unless `url` names another (a self-hosted
reranker speaking the same format). When the endpoint fails, answers out of shape or takes too long, the
search keeps its own order and says nothing to the model; the failure is logged without the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mindroom.logging_config import get_logger

__all__ = ["COHERE_RERANK_URL", "Reranker", "reranked_order"]

logger = get_logger(__name__)

COHERE_RERANK_URL = "https://api.cohere.com/v2/rerank"
_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Reranker:
    """Where and with which model and key the hits are reranked."""

    model: str
    url: str = COHERE_RERANK_URL
    api_key: str | None = None

    @classmethod
    def from_config(cls, config: Any, env: Mapping[str, str]) -> Reranker | None:
        """The reranker `knowledge_reranker` names (a Cohere-format endpoint only), or None."""
        if config is None or config.provider != "cohere":
            return None
        return cls(config.model, config.url or COHERE_RERANK_URL, config.api_key or env.get("COHERE_API_KEY"))


async def reranked_order(reranker: Reranker, query: str, documents: Sequence[str], top_n: int) -> list[int] | None:
    """The indexes of `documents`, best first (at most `top_n`), or None when the endpoint gave no usable answer."""
    import httpx  # only a config with a reranker loads it, at its first search

    body = {"model": reranker.model, "query": query, "documents": list(documents), "top_n": top_n}
    headers = {"Authorization": f"Bearer {reranker.api_key}"} if reranker.api_key else {}
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_S, follow_redirects=False) as client:
            reply = await client.post(reranker.url, json=body, headers=headers)
        reply.raise_for_status()
        results = reply.json()["results"]
        order = [int(item["index"]) for item in results]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        logger.warning("knowledge reranker failed; hits keep their order", url=reranker.url, error=type(exc).__name__)
        return None
    if any(index < 0 or index >= len(documents) for index in order) or len(set(order)) != len(order):
        logger.warning("knowledge reranker answered out of range; hits keep their order", url=reranker.url)
        return None
    return order[:top_n]
