"""`KnowledgeIndex` in the state's PostgreSQL database: every base in `mindroom.knowledge_*`, keyed by base id.

Words are matched with PostgreSQL's text search (an English `tsvector` column the server computes, a GIN
index over it); vectors live in a `pgvector` column (`vector`, no fixed width, so bases embedded by different
models can share the table) and are ranked by its cosine distance operator. When the `vector` extension
cannot be created (not installed, or the role may not), the index holds words only and says so
(`holds_vectors`). Each index has a connection of its own, apart from the daemon's locked writer session,
so indexing a large base never holds up the daemon's own state writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from mindroom.logging_config import get_logger
from mindroom.state.knowledge import IndexCounts, IndexedChunk, IndexedFile, KnowledgeHit, query_terms

__all__ = ["PostgresKnowledgeIndex"]

logger = get_logger(__name__)

_DDL = (
    "CREATE SCHEMA IF NOT EXISTS mindroom",
    """CREATE TABLE IF NOT EXISTS mindroom.knowledge_meta (
        base_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (base_id, key))""",
    """CREATE TABLE IF NOT EXISTS mindroom.knowledge_files (
        base_id TEXT NOT NULL,
        path TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        chunks INTEGER NOT NULL,
        embedded BOOLEAN NOT NULL,
        indexed_at DOUBLE PRECISION NOT NULL,
        skipped TEXT,
        PRIMARY KEY (base_id, path))""",
    """CREATE TABLE IF NOT EXISTS mindroom.knowledge_chunks (
        id BIGSERIAL PRIMARY KEY,
        base_id TEXT NOT NULL,
        path TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        content TEXT NOT NULL,
        words TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', content)) STORED)""",
    "CREATE INDEX IF NOT EXISTS knowledge_chunks_file ON mindroom.knowledge_chunks (base_id, path)",
    # No pending list: a search right after a large refresh would otherwise scan it row by row.
    "CREATE INDEX IF NOT EXISTS knowledge_chunks_words ON mindroom.knowledge_chunks USING GIN (words)"
    " WITH (fastupdate = off)",
)
_VECTOR_DDL = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "ALTER TABLE mindroom.knowledge_chunks ADD COLUMN IF NOT EXISTS embedding vector",
)
_CONNECT_TIMEOUT_S = 10
_WORDS_SQL = """
WITH matched AS MATERIALIZED (
    SELECT id, ts_rank_cd(words, q) AS score
    FROM mindroom.knowledge_chunks, to_tsquery('english', %s) AS q WHERE words @@ q
)
SELECT c.path, c.ordinal, c.content, m.score FROM matched m JOIN mindroom.knowledge_chunks c USING (id)
WHERE c.base_id = %s ORDER BY m.score DESC, c.id LIMIT %s
"""


def _vector_literal(embedding: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(value)) for value in embedding) + "]"


def _prepare(conn: psycopg.Connection[Any]) -> bool:
    """Create the tables; True when the vector column exists (the extension could be created)."""
    with conn.transaction():
        for statement in _DDL:
            conn.execute(statement)  # type: ignore[arg-type]  # constant DDL
    try:
        with conn.transaction():
            for statement in _VECTOR_DDL:
                conn.execute(statement)  # type: ignore[arg-type]
    except psycopg.Error as exc:
        # Another process creating it at the same moment fails the same way: look again before giving up.
        logger.warning("knowledge vectors unavailable in PostgreSQL (pgvector)", error=str(exc).strip())
    row = conn.execute(
        "SELECT 1 FROM information_schema.columns"
        " WHERE table_schema = 'mindroom' AND table_name = 'knowledge_chunks' AND column_name = 'embedding'"
    ).fetchone()
    return row is not None


class PostgresKnowledgeIndex:
    """One base's rows in the shared knowledge tables, on a connection of its own."""

    def __init__(self, url: str, base_id: str) -> None:
        self.base_id = base_id
        self._lock = threading.Lock()
        self._conn = psycopg.connect(
            url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, application_name="mindroom-knowledge"
        )
        self._vectors = _prepare(self._conn)

    def holds_vectors(self) -> bool:
        """Whether this database has the vector column (pgvector)."""
        return self._vectors

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock, self._conn.transaction():
            return self._conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def settings(self) -> str | None:
        """The fingerprint of the settings the index was built with (None: never built)."""
        rows = self._query(
            "SELECT value FROM mindroom.knowledge_meta WHERE base_id = %s AND key = 'settings'", (self.base_id,)
        )
        return str(rows[0][0]) if rows else None

    def reset(self, settings: str) -> None:
        """Empty the base's rows and record the settings it is now built with."""
        with self._lock, self._conn.transaction():
            for table in ("knowledge_chunks", "knowledge_files", "knowledge_meta"):
                self._conn.execute(f"DELETE FROM mindroom.{table} WHERE base_id = %s", (self.base_id,))  # type: ignore[arg-type]  # noqa: S608
            self._conn.execute(
                "INSERT INTO mindroom.knowledge_meta (base_id, key, value) VALUES (%s, 'settings', %s)",
                (self.base_id, settings),
            )

    def files(self) -> dict[str, IndexedFile]:
        """Every file the index knows (indexed or skipped), by path."""
        rows = self._query(
            "SELECT path, fingerprint, chunks, embedded, indexed_at, skipped FROM mindroom.knowledge_files"
            " WHERE base_id = %s",
            (self.base_id,),
        )
        return {row[0]: IndexedFile(row[0], row[1], row[2], bool(row[3]), row[4], row[5]) for row in rows}

    def replace_file(self, file: IndexedFile, chunks: Sequence[IndexedChunk]) -> None:
        """Put a file's chunks in place of its old ones, in one transaction."""
        with self._lock, self._conn.transaction():
            self._conn.execute(
                "DELETE FROM mindroom.knowledge_chunks WHERE base_id = %s AND path = %s", (self.base_id, file.path)
            )
            with self._conn.cursor() as cursor:
                if self._vectors:
                    cursor.executemany(
                        "INSERT INTO mindroom.knowledge_chunks (base_id, path, ordinal, content, embedding)"
                        " VALUES (%s, %s, %s, %s, %s::vector)",
                        [
                            (self.base_id, file.path, chunk.ordinal, chunk.content,
                             None if chunk.embedding is None else _vector_literal(chunk.embedding))
                            for chunk in chunks
                        ],
                    )  # fmt: skip
                else:
                    cursor.executemany(
                        "INSERT INTO mindroom.knowledge_chunks (base_id, path, ordinal, content)"
                        " VALUES (%s, %s, %s, %s)",
                        [(self.base_id, file.path, chunk.ordinal, chunk.content) for chunk in chunks],
                    )
            self._conn.execute(
                "INSERT INTO mindroom.knowledge_files"
                " (base_id, path, fingerprint, chunks, embedded, indexed_at, skipped)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (base_id, path) DO UPDATE SET"
                " fingerprint = EXCLUDED.fingerprint, chunks = EXCLUDED.chunks, embedded = EXCLUDED.embedded,"
                " indexed_at = EXCLUDED.indexed_at, skipped = EXCLUDED.skipped",
                (self.base_id, file.path, file.fingerprint, len(chunks), file.embedded and self._vectors,
                 file.indexed_at or time.time(), file.skipped),
            )  # fmt: skip

    def remove_files(self, paths: Sequence[str]) -> None:
        """Forget files and their chunks."""
        with self._lock, self._conn.transaction():
            for table in ("knowledge_chunks", "knowledge_files"):
                self._conn.execute(
                    f"DELETE FROM mindroom.{table} WHERE base_id = %s AND path = ANY(%s)",  # type: ignore[arg-type]  # noqa: S608
                    (self.base_id, list(paths)),
                )

    def search_text(self, query: str, limit: int) -> list[KnowledgeHit]:
        """The chunks that best match the query's words: those with every word first, then those with any."""
        terms = query_terms(query)
        if not terms:
            return []
        found: dict[tuple[str, int], KnowledgeHit] = {}
        with self._lock, self._conn.transaction():
            # A chunk's `tsvector` is stored out of line (TOAST), which the planner does not price: it would
            # read every chunk of the table rather than the few rows the GIN index names.
            self._conn.execute("SET LOCAL enable_seqscan = off")
            for operator in ("&", "|"):
                rows = self._conn.execute(_WORDS_SQL, (f" {operator} ".join(terms), self.base_id, limit)).fetchall()
                for row in rows:
                    found.setdefault((row[0], row[1]), KnowledgeHit(row[0], row[1], row[2], float(row[3])))
                if len(found) >= limit or len(terms) == 1:
                    break
        return list(found.values())[:limit]

    def search_vector(self, embedding: Sequence[float], limit: int) -> list[KnowledgeHit]:
        """The chunks nearest to `embedding` by pgvector's cosine distance."""
        if not self._vectors:
            return []
        literal = _vector_literal(embedding)
        rows = self._query(
            "SELECT path, ordinal, content, 1 - (embedding <=> %s::vector) FROM mindroom.knowledge_chunks"
            " WHERE base_id = %s AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT %s",
            (literal, self.base_id, literal, limit),
        )
        return [KnowledgeHit(row[0], row[1], row[2], float(row[3])) for row in rows]

    def counts(self) -> IndexCounts:
        """How much the index holds."""
        files = self._query(
            "SELECT count(*) FILTER (WHERE skipped IS NULL), count(*) FILTER (WHERE skipped IS NOT NULL)"
            " FROM mindroom.knowledge_files WHERE base_id = %s",
            (self.base_id,),
        )[0]
        vector_count = "count(embedding)" if self._vectors else "0"
        chunks = self._query(
            f"SELECT count(*), {vector_count} FROM mindroom.knowledge_chunks WHERE base_id = %s",  # noqa: S608
            (self.base_id,),
        )[0]
        return IndexCounts(int(files[0]), int(files[1]), int(chunks[0]), int(chunks[1]))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
