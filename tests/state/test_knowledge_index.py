"""A knowledge index behaves alike in a SQLite file (FTS5, sqlite-vec) and in PostgreSQL (text search, pgvector)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.state.knowledge import (
    IndexedChunk,
    IndexedFile,
    KnowledgeIndex,
    knowledge_index_path,
    query_terms,
)
from mindroom.state.location import open_knowledge_index


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeIndex]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    opened = open_knowledge_index(tmp_path, url, "docs")
    yield opened
    opened.close()


def _file(path: str, *, embedded: bool = False, skipped: str | None = None) -> IndexedFile:
    return IndexedFile(path, f"fp-{path}", 0, embedded, 1.0, skipped)


def test_knowledge_index_finds_chunks_by_stemmed_words(index: KnowledgeIndex):
    index.reset("settings-1")
    index.replace_file(_file("a.md"), [IndexedChunk(0, "The otters were swimming in the river."), IndexedChunk(1, "x")])
    index.replace_file(_file("b.md"), [IndexedChunk(0, "Deployment runbook for the database.")])

    hits = index.search_text("otter swims", 5)

    assert [(hit.path, hit.ordinal) for hit in hits] == [("a.md", 0)]
    assert hits[0].content == "The otters were swimming in the river."
    assert index.settings() == "settings-1"


def test_knowledge_index_replacing_a_file_drops_its_old_chunks(index: KnowledgeIndex):
    index.reset("s")
    index.replace_file(_file("a.md"), [IndexedChunk(0, "old pelican fact")])
    index.replace_file(_file("a.md"), [IndexedChunk(0, "new heron fact")])

    assert index.search_text("pelican", 5) == []
    assert [hit.content for hit in index.search_text("heron", 5)] == ["new heron fact"]
    assert index.files()["a.md"].chunks == 1


def test_knowledge_index_removed_files_leave_no_chunk(index: KnowledgeIndex):
    index.reset("s")
    index.replace_file(_file("a.md", embedded=True), [IndexedChunk(0, "walrus", (1.0, 0.0, 0.0))])
    index.replace_file(_file("b.md", embedded=True), [IndexedChunk(0, "narwhal", (0.0, 1.0, 0.0))])

    index.remove_files(["a.md"])

    assert index.search_text("walrus", 5) == []
    assert [hit.path for hit in index.search_vector((1.0, 0.0, 0.0), 5)] == ["b.md"]
    assert set(index.files()) == {"b.md"}


def test_knowledge_index_ranks_vectors_by_cosine_distance(index: KnowledgeIndex):
    if not index.holds_vectors():
        pytest.fail("this index cannot hold vectors (pgvector missing from the test server?)")
    index.reset("s")
    index.replace_file(
        _file("v.md", embedded=True),
        [IndexedChunk(0, "east", (1.0, 0.0, 0.0)), IndexedChunk(1, "north", (0.0, 1.0, 0.0)),
         IndexedChunk(2, "north-east", (0.7, 0.7, 0.0))],
    )  # fmt: skip

    hits = index.search_vector((0.9, 0.1, 0.0), 2)

    assert [hit.content for hit in hits] == ["east", "north-east"]
    assert hits[0].score > hits[1].score
    assert index.counts().vectors == 3


def test_knowledge_index_counts_and_skipped_files(index: KnowledgeIndex):
    index.reset("s")
    index.replace_file(_file("a.md"), [IndexedChunk(0, "one"), IndexedChunk(1, "two")])
    index.replace_file(_file("broken.pdf", skipped="not a PDF"), [])

    counts = index.counts()

    assert (counts.files, counts.skipped, counts.chunks, counts.vectors) == (1, 1, 2, 0)
    assert index.files()["broken.pdf"].skipped == "not a PDF"


def test_knowledge_index_reset_empties_it(index: KnowledgeIndex):
    index.reset("s")
    index.replace_file(_file("a.md", embedded=True), [IndexedChunk(0, "albatross", (1.0, 0.0))])

    index.reset("other settings")

    assert index.files() == {}
    assert index.search_text("albatross", 5) == []
    assert index.search_vector((1.0, 0.0), 5) == []
    assert index.settings() == "other settings"
    # A new embedder may have another width: the vectors table starts over.
    index.replace_file(_file("b.md", embedded=True), [IndexedChunk(0, "b", (1.0, 0.0, 0.0, 0.0))])
    assert [hit.path for hit in index.search_vector((1.0, 0.0, 0.0, 0.0), 5)] == ["b.md"]


@pytest.mark.postgres
def test_knowledge_index_postgres_bases_share_tables_but_not_rows(postgres_url: str, tmp_path: Path):
    first, second = (
        open_knowledge_index(tmp_path, postgres_url, "one"),
        open_knowledge_index(tmp_path, postgres_url, "two"),
    )
    try:
        first.reset("s")
        second.reset("s")
        first.replace_file(_file("a.md"), [IndexedChunk(0, "kestrel in one")])

        assert second.search_text("kestrel", 5) == []
        second.reset("t")
        assert [hit.path for hit in first.search_text("kestrel", 5)] == ["a.md"]
    finally:
        first.close()
        second.close()


def test_knowledge_index_sqlite_file_is_private_and_named_safely(tmp_path: Path):
    index = open_knowledge_index(tmp_path, None, "team docs/../x")
    index.close()
    path = knowledge_index_path(tmp_path, "team docs/../x")

    assert path.parent == tmp_path / "knowledge_db"
    assert "/" not in path.name[:-3] and path.exists()
    assert path.stat().st_mode & 0o077 == 0


def test_query_terms_are_words_once_each():
    assert query_terms('What is "the" THE answer? answer-42') == ["what", "is", "the", "answer", "42"]
