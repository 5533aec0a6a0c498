"""One knowledge base at run time: refreshed incrementally from its folder, searched by words and vectors.

A refresh lists the folder, drops files that are gone, and reads, chunks, embeds and stores only the files
whose size or modification time changed (and those whose vectors are missing, once an embedder works).
Searches run against what is stored meanwhile: chat never waits for indexing. With an embedder, a search
asks for the query's vector and fuses the word ranking with the vector ranking by reciprocal rank
(`fuse_rankings`); without one, or when the endpoint fails, it ranks by words alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mindroom.ai.knowledge.embedder import Embedder, EmbedderSpec
from mindroom.ai.knowledge.files import BaseFile, UnreadableFileError, base_files, file_chunks
from mindroom.config.knowledge import KnowledgeBaseConfig
from mindroom.logging_config import get_logger
from mindroom.state.knowledge import IndexCounts, IndexedChunk, IndexedFile, KnowledgeHit, KnowledgeIndex

__all__ = ["KnowledgeBase", "RefreshReport", "fuse_rankings"]

logger = get_logger(__name__)

_FILES_PER_STEP = 32
_EMBEDDER_COOLDOWN_S = 30.0
"""After a failed query embedding, searches use words alone this long (no waiting on an endpoint that is down)."""
_RRF_K = 60
"""Reciprocal rank fusion's damping constant (the usual 60): a hit's share is 1 / (60 + its rank)."""


@dataclass(frozen=True, slots=True)
class RefreshReport:
    """What one refresh did."""

    indexed: int
    removed: int
    skipped: tuple[tuple[str, str], ...]
    """Files that could not be read this time: (path, reason)."""
    unchanged: int
    rebuilt: bool
    seconds: float


def fuse_rankings(rankings: Sequence[Sequence[KnowledgeHit]], limit: int) -> list[KnowledgeHit]:
    """Merge ranked hit lists by reciprocal rank: a chunk ranked well in several lists comes first."""
    scores: dict[tuple[str, int], float] = {}
    hits: dict[tuple[str, int], KnowledgeHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            key = (hit.path, hit.ordinal)
            scores[key] = scores.get(key, 0.0) + 1.0 / (_RRF_K + rank + 1)
            hits.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return [KnowledgeHit(hits[key].path, hits[key].ordinal, hits[key].content, scores[key]) for key in ordered[:limit]]


class KnowledgeBase:
    """A base's folder, its index, and its embedder (None: words only)."""

    def __init__(
        self,
        base_id: str,
        config: KnowledgeBaseConfig,
        root: Path,
        index: KnowledgeIndex,
        embedder: EmbedderSpec | None,
    ) -> None:
        self.base_id = base_id
        self.config = config
        self.root = root
        self.index = index
        self.embedder_spec = embedder if index.holds_vectors() else None
        self._embedder = Embedder(self.embedder_spec) if self.embedder_spec is not None else None
        self._refreshing = asyncio.Lock()
        self._embedder_down_until = 0.0
        self.last_report: RefreshReport | None = None
        self.last_error: str | None = None

    def settings(self) -> str:
        """The fingerprint of everything that shapes the index: a change rebuilds it whole."""
        facts = self.config.model_dump(
            include={"path", "chunk_size", "chunk_overlap", "include_patterns", "exclude_patterns", "skip_hidden"}
        )
        facts["extensions"] = sorted(self.config.extensions())
        facts["git"] = (
            self.config.git.model_dump(include={"repo_url", "branch", "include_patterns"}) if self.config.git else None
        )
        facts["embedder"] = self.embedder_spec.fingerprint if self.embedder_spec is not None else None
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]

    @property
    def ready(self) -> bool:
        """Whether the index was built with the current settings (it may still be catching up with the files)."""
        return self.index.settings() == self.settings()

    async def refresh(self, *, rebuild: bool = False) -> RefreshReport:
        """Bring the index up to date with the folder (`rebuild`: from nothing); one refresh at a time."""
        async with self._refreshing:
            started = time.monotonic()
            try:
                report = await self._refresh(rebuild, started)
            except Exception as exc:
                self.last_error = str(exc) or type(exc).__name__
                logger.warning("knowledge refresh failed", base=self.base_id, error=self.last_error)
                raise
            self.last_error = None
            self.last_report = report
            logger.info(
                "knowledge base refreshed",
                base=self.base_id,
                indexed=report.indexed,
                removed=report.removed,
                skipped=len(report.skipped),
                rebuilt=report.rebuilt,
                seconds=round(report.seconds, 3),
            )
            return report

    async def _refresh(self, rebuild: bool, started: float) -> RefreshReport:
        settings = self.settings()
        rebuilt = rebuild or await asyncio.to_thread(self.index.settings) != settings
        if rebuilt:
            await asyncio.to_thread(self.index.reset, settings)
        if not self.root.is_dir():
            raise FileNotFoundError(f"the folder {self.root} does not exist")
        current = await asyncio.to_thread(base_files, self.root, self.config)
        known = await asyncio.to_thread(self.index.files)
        gone = sorted(set(known) - set(current))
        if gone:
            await asyncio.to_thread(self.index.remove_files, gone)
        todo = [file for path, file in sorted(current.items()) if self._stale(known.get(path), file)]
        skipped: list[tuple[str, str]] = []
        embedding = self._embedder is not None
        for start in range(0, len(todo), _FILES_PER_STEP):
            step = todo[start : start + _FILES_PER_STEP]
            embedding = await self._index_step(step, skipped, embedding)
        return RefreshReport(
            len(todo) - len(skipped), len(gone), tuple(skipped), len(current) - len(todo), rebuilt,
            time.monotonic() - started,
        )  # fmt: skip

    def _stale(self, known: IndexedFile | None, file: BaseFile) -> bool:
        if known is None or known.fingerprint != file.fingerprint:
            return True
        return known.skipped is None and not known.embedded and self._embedder is not None and known.chunks > 0

    def _read_step(self, files: Sequence[BaseFile]) -> list[tuple[BaseFile, list[str] | str]]:
        read: list[tuple[BaseFile, list[str] | str]] = []
        for file in files:
            try:
                read.append((file, file_chunks(self.root, file, self.config)))
            except UnreadableFileError as exc:
                read.append((file, str(exc)))
        return read

    async def _index_step(self, files: Sequence[BaseFile], skipped: list[tuple[str, str]], embedding: bool) -> bool:
        read = await asyncio.to_thread(self._read_step, files)
        texts = [chunk for _file, chunks in read if isinstance(chunks, list) for chunk in chunks]
        vectors: list[tuple[float, ...]] | None = None
        if embedding and texts and self._embedder is not None:
            try:
                vectors = await self._embedder.documents(texts)
            except Exception as exc:  # the endpoint's failure: index the words now, the vectors on a later refresh
                logger.warning("embedding failed: indexing words only", base=self.base_id, error=str(exc))
                embedding = False
        now = time.time()
        rows: list[tuple[IndexedFile, list[IndexedChunk]]] = []
        offset = 0
        for file, chunks in read:
            if isinstance(chunks, str):
                skipped.append((file.path, chunks))
                logger.warning("knowledge file skipped", base=self.base_id, path=file.path, reason=chunks)
                rows.append((IndexedFile(file.path, file.fingerprint, 0, False, now, chunks), []))
                continue
            mine = vectors[offset : offset + len(chunks)] if vectors is not None else None
            offset += len(chunks)
            stored = [
                IndexedChunk(ordinal, text, None if mine is None else mine[ordinal])
                for ordinal, text in enumerate(chunks)
            ]
            rows.append((IndexedFile(file.path, file.fingerprint, len(chunks), mine is not None, now), stored))
        await asyncio.to_thread(self._store, rows)
        return embedding

    def _store(self, rows: Sequence[tuple[IndexedFile, Sequence[IndexedChunk]]]) -> None:
        for file, chunks in rows:
            self.index.replace_file(file, chunks)

    async def search(self, query: str, limit: int = 10) -> list[KnowledgeHit]:
        """The chunks that answer `query` best: words and vectors fused, or words alone."""
        if not query.strip():
            return []
        words = asyncio.ensure_future(asyncio.to_thread(self.index.search_text, query, limit * 2))
        if self._embedder is None or time.monotonic() < self._embedder_down_until:
            return (await words)[:limit]
        try:
            vector = await self._embedder.query(query)
        except Exception as exc:  # search still answers, by words
            self._embedder_down_until = time.monotonic() + _EMBEDDER_COOLDOWN_S
            logger.warning("query embedding failed: searching by words", base=self.base_id, error=str(exc))
            return (await words)[:limit]
        near = await asyncio.to_thread(self.index.search_vector, vector, limit * 2)
        return fuse_rankings([await words, near], limit)

    def counts(self) -> IndexCounts:
        """How much the index holds (blocks: call in a thread from async code)."""
        return self.index.counts()

    async def close(self) -> None:
        """Close the embedder's client and the index."""
        if self._embedder is not None:
            await self._embedder.close()
        await asyncio.to_thread(self.index.close)
