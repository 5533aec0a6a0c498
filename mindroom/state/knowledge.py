"""Knowledge indexes: the chunks of a base's files, their full-text index and (with an embedder) their vectors.

`location.open_knowledge_index` picks one: `sqlite.knowledge.SqliteKnowledgeIndex` keeps one base in a
SQLite file under the data directory (FTS5 for words, the `sqlite-vec` extension for vectors);
`postgres.knowledge.PostgresKnowledgeIndex` keeps every base in the state's database (PostgreSQL's text
search for words, `pgvector` for vectors). Both rank: a text search by BM25-style relevance, a vector
search by the store's own cosine distance; the AI layer fuses them.

The index is derived data: a lost or stale one is rebuilt from the files, so it is not copied by
`mindroom state migrate`. Calls block (run them in a thread); each file's rows change in one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = [
    "IndexCounts",
    "IndexedChunk",
    "IndexedFile",
    "KnowledgeHit",
    "KnowledgeIndex",
    "knowledge_index_path",
    "query_terms",
]

_TERM = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file as last indexed: its path in the base, what it was (`fingerprint`), and how it went."""

    path: str
    fingerprint: str
    chunks: int
    embedded: bool
    """Its chunks have vectors (False without an embedder, or when embedding failed: a refresh tries again)."""
    indexed_at: float
    skipped: str | None = None
    """Why the file is not in the index (it could not be read); None when it is."""


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """One chunk to store: its place in the file, its text, its vector (None: text search only)."""

    ordinal: int
    content: str
    embedding: tuple[float, ...] | None = None


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """A chunk found by a search; `score` orders hits of one search (higher is better)."""

    path: str
    ordinal: int
    content: str
    score: float


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """What an index holds: files indexed, files skipped, chunks, chunks with vectors."""

    files: int
    skipped: int
    chunks: int
    vectors: int


class KnowledgeIndex(Protocol):
    """One base's index: files by path, chunks replaced a file at a time, text and vector search."""

    def holds_vectors(self) -> bool:
        """Whether chunks can have vectors here (False: words only, e.g. PostgreSQL without pgvector)."""

    def settings(self) -> str | None:
        """The fingerprint of the settings the index was built with (None: never built)."""

    def reset(self, settings: str) -> None:
        """Empty the index and record the settings it is now built with."""

    def files(self) -> dict[str, IndexedFile]:
        """Every file the index knows (indexed or skipped), by path."""

    def replace_file(self, file: IndexedFile, chunks: Sequence[IndexedChunk]) -> None:
        """Put a file's chunks in place of its old ones, in one transaction."""

    def remove_files(self, paths: Sequence[str]) -> None:
        """Forget files and their chunks."""

    def search_text(self, query: str, limit: int) -> list[KnowledgeHit]:
        """The chunks that best match the query's words."""

    def search_vector(self, embedding: Sequence[float], limit: int) -> list[KnowledgeHit]:
        """The chunks whose vectors are nearest to `embedding` (none when no chunk has one)."""

    def counts(self) -> IndexCounts:
        """How much the index holds."""

    def close(self) -> None:
        """Release the connection."""


def query_terms(query: str) -> list[str]:
    """The words of a search query, lowercased, in order, each once (at most 32)."""
    seen: dict[str, None] = {}
    for term in _TERM.findall(query.lower()):
        seen.setdefault(term, None)
    return list(seen)[:_MAX_TERMS]


def knowledge_index_path(storage_root: Path, base_id: str) -> Path:
    """`<data>/knowledge_db/<base_id>.db`, with a digest standing in for characters a file name cannot hold."""
    import hashlib

    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", base_id)[:60].lstrip(".") or "base"
    if safe != base_id:
        safe = f"{safe}_{hashlib.sha256(base_id.encode()).hexdigest()[:8]}"
    return Path(storage_root) / "knowledge_db" / f"{safe}.db"
