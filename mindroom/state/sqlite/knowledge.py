"""`KnowledgeIndex` in one SQLite file per base: `<data>/knowledge_db/<base>.db`.

Chunks are rows of `chunks`; their words are in an FTS5 table (Porter stemming, contentless, so the text is
stored once) and their vectors in a `vec0` table of the `sqlite-vec` extension, created when the first vector
arrives (its width is the embedder's). Python's own `sqlite3` here cannot load extensions, so the file is
opened with `apsw`, which ships a current SQLite with FTS5 and extension loading.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

from mindroom.private_files import prepare_private_sqlite, private_dir
from mindroom.state.knowledge import IndexCounts, IndexedChunk, IndexedFile, KnowledgeHit, query_terms

__all__ = ["SqliteKnowledgeIndex"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    embedded INTEGER NOT NULL,
    indexed_at REAL NOT NULL,
    skipped TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    content TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    content, content='', contentless_delete=1, tokenize='porter unicode61'
);
"""
_BUSY_TIMEOUT_MS = 10_000


def _connect(path: Path) -> apsw.Connection:
    private_dir(path.parent)
    prepare_private_sqlite(path)
    db = apsw.Connection(str(path))
    db.set_busy_timeout(_BUSY_TIMEOUT_MS)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    db.execute("PRAGMA journal_mode=WAL").fetchall()  # a pragma that answers runs only as its rows are read
    db.execute("PRAGMA cache_size=-4096").fetchall()
    # Derived data, rebuilt from the files if a power loss takes its last commits: no fsync per file indexed.
    db.execute("PRAGMA synchronous=NORMAL").fetchall()
    db.execute(_SCHEMA)
    return db


class SqliteKnowledgeIndex:
    """One base's chunks, words and vectors in a SQLite file (WAL: the CLI reads while the daemon writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = _connect(path)

    def holds_vectors(self) -> bool:
        """Always: `sqlite-vec` is loaded into every connection."""
        return True

    def _value(self, key: str) -> str | None:
        rows = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        return str(rows[0][0]) if rows else None

    def _set(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _has_vectors(self) -> bool:
        return self._value("dimensions") is not None

    def settings(self) -> str | None:
        """The fingerprint of the settings the index was built with (None: never built)."""
        with self._lock:
            return self._value("settings")

    def reset(self, settings: str) -> None:
        """Empty the index and record the settings it is now built with."""
        with self._lock, self._db:
            self._db.execute(
                "DELETE FROM chunks; DELETE FROM files; DROP TABLE IF EXISTS vectors;"
                " INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')"
            )
            self._db.execute("DELETE FROM meta WHERE key = 'dimensions'")
            self._set("settings", settings)

    def files(self) -> dict[str, IndexedFile]:
        """Every file the index knows (indexed or skipped), by path."""
        with self._lock:
            rows = self._db.execute("SELECT path, fingerprint, chunks, embedded, indexed_at, skipped FROM files")
            return {row[0]: IndexedFile(row[0], row[1], row[2], bool(row[3]), row[4], row[5]) for row in rows}

    def _vector_table(self, width: int) -> None:
        known = self._value("dimensions")
        if known is None:
            self._db.execute(
                f"CREATE VIRTUAL TABLE vectors USING vec0(embedding float[{int(width)}] distance_metric=cosine)"
            )
            self._set("dimensions", str(width))
        elif int(known) != width:
            msg = f"the embedder returned {width} dimensions; this index holds {known} (reindex the base)"
            raise ValueError(msg)

    def _delete_chunks(self, paths: Sequence[str]) -> None:
        vectors = self._has_vectors()
        for path in paths:
            ids = [row[0] for row in self._db.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
            for chunk_id in ids:
                self._db.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
                if vectors:
                    self._db.execute("DELETE FROM vectors WHERE rowid = ?", (chunk_id,))
            self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))

    def replace_file(self, file: IndexedFile, chunks: Sequence[IndexedChunk]) -> None:
        """Put a file's chunks in place of its old ones, in one transaction."""
        with self._lock, self._db:
            self._delete_chunks([file.path])
            for chunk in chunks:
                cursor = self._db.execute(
                    "INSERT INTO chunks (path, ordinal, content) VALUES (?, ?, ?) RETURNING id",
                    (file.path, chunk.ordinal, chunk.content),
                )
                chunk_id = cursor.fetchall()[0][0]
                self._db.execute("INSERT INTO chunks_fts (rowid, content) VALUES (?, ?)", (chunk_id, chunk.content))
                if chunk.embedding is not None:
                    self._vector_table(len(chunk.embedding))
                    self._db.execute(
                        "INSERT INTO vectors (rowid, embedding) VALUES (?, ?)",
                        (chunk_id, sqlite_vec.serialize_float32(list(chunk.embedding))),
                    )
            self._db.execute(
                "INSERT INTO files (path, fingerprint, chunks, embedded, indexed_at, skipped) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (path) DO UPDATE SET fingerprint = excluded.fingerprint, chunks = excluded.chunks,"
                " embedded = excluded.embedded, indexed_at = excluded.indexed_at, skipped = excluded.skipped",
                (file.path, file.fingerprint, len(chunks), int(file.embedded), file.indexed_at or time.time(),
                 file.skipped),
            )  # fmt: skip

    def remove_files(self, paths: Sequence[str]) -> None:
        """Forget files and their chunks."""
        with self._lock, self._db:
            self._delete_chunks(paths)
            for path in paths:
                self._db.execute("DELETE FROM files WHERE path = ?", (path,))

    def _hits(self, ranked: list[tuple[int, float]]) -> list[KnowledgeHit]:
        if not ranked:
            return []
        marks = ", ".join("?" * len(ranked))
        rows = self._db.execute(
            f"SELECT id, path, ordinal, content FROM chunks WHERE id IN ({marks})",  # noqa: S608 - only marks
            [chunk_id for chunk_id, _score in ranked],
        )
        found: dict[int, Any] = {row[0]: row for row in rows}
        return [KnowledgeHit(found[i][1], found[i][2], found[i][3], score) for i, score in ranked if i in found]

    def search_text(self, query: str, limit: int) -> list[KnowledgeHit]:
        """The chunks that best match the query's words (BM25, any word counts)."""
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        with self._lock:
            ranked = [
                (row[0], -float(row[1]))
                for row in self._db.execute(
                    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?", (match, limit)
                )
            ]
            return self._hits(ranked)

    def search_vector(self, embedding: Sequence[float], limit: int) -> list[KnowledgeHit]:
        """The chunks nearest to `embedding` by cosine distance (none when no chunk has a vector)."""
        with self._lock:
            if not self._has_vectors():
                return []
            ranked = [
                (row[0], 1.0 - float(row[1]))
                for row in self._db.execute(
                    "SELECT rowid, distance FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                    (sqlite_vec.serialize_float32(list(embedding)), limit),
                )
            ]
            return self._hits(ranked)

    def counts(self) -> IndexCounts:
        """How much the index holds."""
        with self._lock:
            found: list[Any] = list(
                self._db.execute(
                    "SELECT count(*) FILTER (WHERE skipped IS NULL), count(*) FILTER (WHERE skipped IS NOT NULL),"
                    " (SELECT count(*) FROM chunks) FROM files"
                ).fetchall()[0]
            )
            vectors = self._db.execute("SELECT count(*) FROM vectors").fetchall()[0][0] if self._has_vectors() else 0
            return IndexCounts(int(found[0]), int(found[1]), int(found[2]), int(vectors))  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()
