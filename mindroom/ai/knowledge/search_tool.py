"""`search_knowledge_base(query)`: the tool an agent naming knowledge bases gets (MindRoom's name and shape).

It searches every base of the agent at once, interleaves their hits (at most 10 in all; with a
`knowledge_reranker`, the reranker picks and orders the 10 among all of them), and returns them as text the
model reads: where each chunk is from, then the chunk. A base whose index is not built yet
says so instead of answering nothing. The tool is a `ToolSpec`, so its calls pass the tool hooks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from mindroom.ai.knowledge.base import KnowledgeBase
from mindroom.ai.knowledge.rerank import Reranker, reranked_order
from mindroom.state.knowledge import KnowledgeHit
from mindroom.tool_system.spec import ToolSpec

__all__ = ["KNOWLEDGE_SEARCH_TOOL_NAME", "MAX_RESULTS", "knowledge_search_tool"]

KNOWLEDGE_SEARCH_TOOL_NAME = "search_knowledge_base"
MAX_RESULTS = 10


def _interleaved(rankings: Sequence[Sequence[tuple[str, KnowledgeHit]]], limit: int) -> list[tuple[str, KnowledgeHit]]:
    merged: list[tuple[str, KnowledgeHit]] = []
    for rank in range(max((len(ranking) for ranking in rankings), default=0)):
        merged.extend(ranking[rank] for ranking in rankings if rank < len(ranking))
    return merged[:limit]


def _describe(bases: Sequence[KnowledgeBase]) -> str:
    lines = ["Search the knowledge bases for passages that answer a question; returns the best matching passages."]
    lines += [f"- {base.base_id}: {base.config.description}" if base.config.description else f"- {base.base_id}"
              for base in bases]  # fmt: skip
    return "\n".join(lines)


def knowledge_search_tool(bases: Sequence[KnowledgeBase], reranker: Reranker | None = None) -> ToolSpec:
    """The search tool over `bases` (build it once per set of bases and reranker: agents are cached on their
    tools' identity)."""
    chosen = tuple(bases)

    async def search_knowledge_base(query: str) -> str:
        async def one(base: KnowledgeBase) -> list[tuple[str, KnowledgeHit]]:
            return [(base.base_id, hit) for hit in await base.search(query, MAX_RESULTS)]

        found = await asyncio.gather(*(one(base) for base in chosen))
        ready = await asyncio.to_thread(lambda: [base.ready for base in chosen])
        pending = [base.base_id for base, built in zip(chosen, ready, strict=True) if not built]
        notes = [f"(The knowledge base {base_id} is still being indexed.)" for base_id in pending]
        hits = _interleaved(found, MAX_RESULTS if reranker is None else sum(map(len, found)))
        if reranker is not None and hits:
            order = await reranked_order(reranker, query, [hit.content for _, hit in hits], MAX_RESULTS)
            hits = [hits[index] for index in order] if order is not None else hits[:MAX_RESULTS]
        if not hits:
            return "\n".join([*notes, "No passage matches the query."])
        passages = [f"[{base_id}: {hit.path} #{hit.ordinal + 1}]\n{hit.content}" for base_id, hit in hits]
        return "\n\n".join([*notes, *passages])

    return ToolSpec(
        name=KNOWLEDGE_SEARCH_TOOL_NAME,
        function=search_knowledge_base,
        description=_describe(chosen),
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for, in a few words."}},
            "required": ["query"],
        },
        toolkit="knowledge",
    )
