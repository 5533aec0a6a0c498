"""A knowledge base refreshes incrementally from its folder and answers searches by words, or words and vectors."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from mindroom.ai.knowledge.base import KnowledgeBase, fuse_rankings
from mindroom.ai.knowledge.embedder import EmbedderSpec, embedder_spec
from mindroom.config.knowledge import KnowledgeBaseConfig
from mindroom.config.memory import MemoryEmbedderConfig
from mindroom.state.knowledge import KnowledgeHit
from mindroom.state.location import open_knowledge_index
from mindroom.testing.model_server import ScriptedModelServer

pytestmark = pytest.mark.asyncio

Make = Callable[..., KnowledgeBase]


@pytest_asyncio.fixture
async def make_base(tmp_path: Path) -> AsyncIterator[Make]:
    made: list[KnowledgeBase] = []

    def make(embedder: EmbedderSpec | None = None, **settings: object) -> KnowledgeBase:
        config = KnowledgeBaseConfig(path=str(tmp_path / "docs"), **settings)  # type: ignore[arg-type]
        base = KnowledgeBase(
            "docs", config, tmp_path / "docs", open_knowledge_index(tmp_path / "data", None, "docs"), embedder
        )
        made.append(base)
        return base

    (tmp_path / "docs").mkdir()
    yield make
    for base in made:
        await base.close()


def _write(root: Path, name: str, text: str | bytes) -> Path:
    path = root / "docs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _touch_later(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


async def test_knowledge_refresh_indexes_only_what_changed(make_base: Make, tmp_path: Path):
    base = make_base()
    _write(tmp_path, "otters.md", "# Otters\nSea otters hold hands while sleeping.")
    _write(tmp_path, "notes/budget.txt", "The budget review is on Thursday.")

    first = await base.refresh()
    second = await base.refresh()
    edited = _write(tmp_path, "otters.md", "# Otters\nRiver otters eat crayfish.")
    _touch_later(edited)
    third = await base.refresh()

    assert (first.indexed, first.rebuilt) == (2, True)
    assert (second.indexed, second.unchanged) == (0, 2)
    assert (third.indexed, third.unchanged) == (1, 1)
    assert [hit.path for hit in await base.search("crayfish")] == ["otters.md"]
    assert await base.search("sleeping") == []
    assert [hit.path for hit in await base.search("thursday budget")] == ["notes/budget.txt"]


async def test_knowledge_deleted_files_leave_the_index(make_base: Make, tmp_path: Path):
    base = make_base()
    doomed = _write(tmp_path, "doomed.md", "The launch code word is heliotrope.")
    await base.refresh()

    doomed.unlink()
    report = await base.refresh()

    assert report.removed == 1
    assert await base.search("heliotrope") == []
    assert base.counts().files == 0


async def test_knowledge_unreadable_files_are_skipped_with_path_and_reason(make_base: Make, tmp_path: Path):
    base = make_base()
    _write(tmp_path, "good.md", "Penguins live in the southern hemisphere.")
    _write(tmp_path, "latin1.txt", "caf\xe9 au lait".encode("latin-1"))
    _write(tmp_path, "broken.pdf", b"%PDF-1.4 this is not really a pdf")

    with capture_logs() as logs:
        report = await base.refresh()

    reasons = dict(report.skipped)
    assert set(reasons) == {"latin1.txt", "broken.pdf"}
    assert "not UTF-8" in reasons["latin1.txt"]
    assert "PDFReader" in reasons["broken.pdf"]
    assert {(log["path"], log["event"]) for log in logs if log.get("path")} == {
        ("latin1.txt", "knowledge file skipped"),
        ("broken.pdf", "knowledge file skipped"),
    }
    assert [hit.path for hit in await base.search("penguins")] == ["good.md"]
    assert base.index.files()["broken.pdf"].skipped == reasons["broken.pdf"]
    # An unreadable file that did not change is not read again.
    assert (await base.refresh()).skipped == ()


async def test_knowledge_files_follow_extensions_patterns_and_hidden_rules(make_base: Make, tmp_path: Path):
    base = make_base(exclude_patterns=["drafts/**"], extra_extensions=["log"], exclude_extensions=[".txt"])
    _write(tmp_path, "kept.md", "alpha")
    _write(tmp_path, "drafts/wip.md", "beta")
    _write(tmp_path, "skipped.txt", "gamma")
    _write(tmp_path, "server.log", "delta")
    _write(tmp_path, ".hidden/secret.md", "epsilon")
    _write(tmp_path, "image.png", "zeta")

    await base.refresh()

    assert sorted(base.index.files()) == ["kept.md", "server.log"]


async def test_knowledge_chunks_long_files_by_characters(make_base: Make, tmp_path: Path):
    base = make_base(chunk_size=128)
    _write(tmp_path, "long.md", " ".join(f"word{i}" for i in range(200)))

    await base.refresh()

    assert base.counts().chunks > 5
    hit = (await base.search("word150"))[0]
    assert "word150" in hit.content and len(hit.content) <= 128


async def test_knowledge_hybrid_search_uses_the_embeddings_endpoint(
    make_base: Make, tmp_path: Path, model_server: ScriptedModelServer
):
    spec = EmbedderSpec("embed", model_server.base_url, "key", 32)
    base = make_base(embedder=spec)
    _write(tmp_path, "fox.md", "The red fox sleeps in a den under the old oak.")
    _write(tmp_path, "tax.md", "Quarterly tax filings are due in April.")

    await base.refresh()
    hits = await base.search("where does the fox sleep")

    assert base.counts().vectors == 2
    assert hits[0].path == "fox.md"
    # Fused: the fox chunk tops both rankings, so it scores above any single-list hit.
    assert hits[0].score > 1 / 61


async def test_knowledge_embedding_failure_indexes_words_and_retries_vectors_later(
    make_base: Make, tmp_path: Path, model_server: ScriptedModelServer
):
    base = make_base(embedder=EmbedderSpec("embed", "http://127.0.0.1:9/v1", "key", 16))
    _write(tmp_path, "a.md", "Capybaras are the largest rodents.")

    report = await base.refresh()

    assert report.indexed == 1 and base.counts().vectors == 0
    assert [hit.path for hit in await base.search("capybaras")] == ["a.md"]  # by words, the query embedding fails too
    fixed = make_base(embedder=EmbedderSpec("embed", model_server.base_url, "key", 16))
    await fixed.refresh()
    assert fixed.counts().vectors == 1


async def test_knowledge_settings_change_rebuilds_the_index(make_base: Make, tmp_path: Path):
    _write(tmp_path, "a.md", " ".join(["lorem"] * 100))
    await make_base(chunk_size=5000).refresh()

    rebuilt = await make_base(chunk_size=128).refresh()

    assert rebuilt.rebuilt and rebuilt.indexed == 1


async def test_fuse_rankings_rewards_agreement():
    a, b, c = (KnowledgeHit(p, 0, p, 0.0) for p in ("a", "b", "c"))

    fused = fuse_rankings([[a, b, c], [b, c]], 3)

    assert [hit.path for hit in fused] == ["b", "c", "a"]


async def test_embedder_spec_needs_an_endpoint_or_a_key():
    assert embedder_spec(None, {}) is None
    assert embedder_spec(MemoryEmbedderConfig(), {}) is None
    keyed = embedder_spec(MemoryEmbedderConfig(), {"OPENAI_API_KEY": "sk-test-key-123456"})
    assert keyed is not None and keyed.base_url is None and keyed.api_key == "sk-test-key-123456"
    local = embedder_spec(MemoryEmbedderConfig(config={"host": "http://127.0.0.1:1/v1/"}), {})  # type: ignore[arg-type]
    assert local is not None and local.base_url == "http://127.0.0.1:1/v1"
    ollama = embedder_spec(MemoryEmbedderConfig(provider="ollama"), {"OLLAMA_HOST": "http://gpu:11434"})
    assert ollama is not None and ollama.base_url == "http://gpu:11434/v1"
    assert embedder_spec(MemoryEmbedderConfig(provider="sentence_transformers"), {}) is None
    assert keyed.fingerprint != local.fingerprint


async def test_knowledge_search_when_the_endpoint_errors_falls_back_to_words(
    make_base: Make, tmp_path: Path, model_server: ScriptedModelServer
):
    base = make_base(embedder=EmbedderSpec("embed", model_server.base_url, "key", 16))
    _write(tmp_path, "a.md", "Axolotls regrow their limbs.")
    await base.refresh()
    model_server.stop()

    assert [hit.path for hit in await base.search("axolotls")] == ["a.md"]
