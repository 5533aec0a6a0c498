"""A base's files are its own: symbolic links are neither listed nor read, wherever they point."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.ai.knowledge.base import KnowledgeBase
from mindroom.ai.knowledge.files import UnreadableFileError, base_files, file_chunks
from mindroom.config.knowledge import KnowledgeBaseConfig
from mindroom.state.location import open_knowledge_index

pytestmark = pytest.mark.asyncio


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    (docs / "sub").mkdir(parents=True)
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.md").write_text("The vault code is 4711.")
    (outside / "sub" / "notes.md").write_text("The osprey dives.")
    return docs, outside


def _pdf(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


async def test_knowledge_symlinked_files_and_folders_are_not_indexed(tmp_path: Path):
    docs, outside = _folders(tmp_path)
    (docs / "kept.md").write_text("The kestrel hovers.")
    (docs / "link").symlink_to(outside, target_is_directory=True)
    (docs / "file-link.md").symlink_to(outside / "secret.md")
    (docs / "sub" / "inner-link.md").symlink_to(docs / "kept.md")  # pointing inside the base: not followed either
    (docs / "sub-link").symlink_to(docs / "sub", target_is_directory=True)
    config = KnowledgeBaseConfig(path=str(docs))
    base = KnowledgeBase("docs", config, docs, open_knowledge_index(tmp_path / "data", None, "docs"), None)

    try:
        report = await base.refresh()

        assert sorted(base.index.files()) == ["kept.md"] and report.skipped == ()
        assert await base.search("vault") == [] and await base.search("osprey") == []
        assert [hit.path for hit in await base.search("kestrel")] == ["kept.md"]
    finally:
        await base.close()


async def test_knowledge_a_file_or_folder_swapped_for_a_symlink_after_listing_is_not_read(tmp_path: Path):
    docs, outside = _folders(tmp_path)
    (docs / "secret.md").write_text("Nothing to see.")
    (docs / "sub" / "notes.md").write_text("Nothing here either.")
    config = KnowledgeBaseConfig(path=str(docs))
    listed = base_files(docs, config)
    (docs / "secret.md").unlink()
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "sub").rename(tmp_path / "old-sub")
    (docs / "sub").symlink_to(outside / "sub", target_is_directory=True)

    for path in ("secret.md", "sub/notes.md"):
        with pytest.raises(UnreadableFileError, match="symbolic link"):
            file_chunks(docs, listed[path], config)


async def test_knowledge_reads_pdfs_through_agnos_reader(tmp_path: Path):
    docs, _outside = _folders(tmp_path)
    (docs / "sub" / "guide.pdf").write_bytes(_pdf("Ospreys nest on poles"))
    config = KnowledgeBaseConfig(path=str(docs))

    chunks = file_chunks(docs, base_files(docs, config)["sub/guide.pdf"], config)

    assert chunks == ["Ospreys nest on poles"]


async def test_knowledge_a_folder_replaced_by_a_file_after_listing_is_not_called_a_link(tmp_path: Path):
    docs, _outside = _folders(tmp_path)
    (docs / "sub" / "notes.md").write_text("Nothing here.")
    config = KnowledgeBaseConfig(path=str(docs))
    listed = base_files(docs, config)
    (docs / "sub").rename(tmp_path / "old-sub")
    (docs / "sub").write_text("a file now")

    with pytest.raises(UnreadableFileError, match="Not a directory"):
        file_chunks(docs, listed["sub/notes.md"], config)
