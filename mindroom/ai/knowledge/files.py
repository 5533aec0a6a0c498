"""Which files of a knowledge base count, and their text in chunks (agno's readers and chunking).

Text-like files (Markdown, plain text, code, JSON, CSV ...) are decoded here, so a file that is not UTF-8 is
skipped with that reason, and cut by characters with agno's `FixedSizeChunking` (`chunk_size`,
`chunk_overlap`). PDF, Word, PowerPoint and Excel files go through agno's reader for the format, with its own
chunking; a reader whose package is missing, or that finds no text, skips the file with the reason.

Symbolic links are never followed, neither when listing nor when reading: a linked file or folder is not
part of the base, wherever it points (inside the base or not), and a file replaced by a link, or a folder
on its path replaced by one, after the listing is skipped rather than read (the reading walk is the one the
file tools use, `mindroom.tool_system.confined_open`).
"""

from __future__ import annotations

import errno
import functools
import importlib
import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.knowledge.chunking.fixed import FixedSizeChunking
from agno.knowledge.document.base import Document

from mindroom.config.knowledge import KnowledgeBaseConfig
from mindroom.errors import MindroomError
from mindroom.tool_system.confined_open import open_file_in, open_folder_below, open_root

__all__ = ["MAX_FILE_BYTES", "BaseFile", "UnreadableFileError", "base_files", "file_chunks", "matches_glob"]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Larger files are skipped (with that reason), as MindRoom does."""

_READERS = {
    ".pdf": ("agno.knowledge.reader.pdf_reader", "PDFReader", "pypdf"),
    ".docx": ("agno.knowledge.reader.docx_reader", "DocxReader", "python-docx"),
    ".pptx": ("agno.knowledge.reader.pptx_reader", "PPTXReader", "python-pptx"),
    ".xlsx": ("agno.knowledge.reader.excel_reader", "ExcelReader", "openpyxl"),
}
"""Formats read by an agno reader: its module, class, and the package it needs."""


class UnreadableFileError(MindroomError):
    """A file the base cannot index; the message says why (shown by `mindroom knowledge status`)."""


@dataclass(frozen=True, slots=True)
class BaseFile:
    """One file of a base: its path relative to the base's folder, and what identifies this version of it."""

    path: str
    size: int
    fingerprint: str


@functools.cache
def _segment_pattern(pattern: str) -> re.Pattern[str]:
    segments = pattern.strip("/").split("/")
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in segment))
        if not last:
            parts.append("/")
    return re.compile("^" + "".join(parts) + "$")


def matches_glob(path: str, pattern: str) -> bool:
    """Whether a base-relative path matches a root-anchored glob: `*` within one segment, `**` across any."""
    return bool(_segment_pattern(pattern).match(path))


def _wanted(path: str, base: KnowledgeBaseConfig, extensions: frozenset[str]) -> bool:
    include = [*base.include_patterns, *(base.git.include_patterns if base.git else ())]
    exclude = [*base.exclude_patterns, *(base.git.exclude_patterns if base.git else ())]
    if Path(path).suffix.lower() not in extensions:
        return False
    if include and not any(matches_glob(path, pattern) for pattern in include):
        return False
    return not any(matches_glob(path, pattern) for pattern in exclude)


def base_files(root: Path, base: KnowledgeBaseConfig) -> dict[str, BaseFile]:
    """The regular files under `root` the base indexes, by relative path (symlinks and hidden names skipped)."""
    extensions = base.extensions()
    skip_hidden = base.skip_hidden and (base.git is None or base.git.skip_hidden)
    found: dict[str, BaseFile] = {}
    for folder, dirs, names in os.walk(root):
        # A Git checkout's own folder is never content, hidden names skipped or not.
        dirs[:] = [name for name in dirs if name != ".git" and not (skip_hidden and name.startswith("."))]
        dirs.sort()
        for name in sorted(names):
            if skip_hidden and name.startswith("."):
                continue
            full = Path(folder) / name
            relative = full.relative_to(root).as_posix()
            if not _wanted(relative, base, extensions):
                continue
            try:
                info = full.lstat()
            except OSError:
                continue  # gone since the listing
            if stat.S_ISREG(info.st_mode):
                found[relative] = BaseFile(relative, info.st_size, f"{info.st_size}:{info.st_mtime_ns}")
    return found


def _read_inside(root: Path, relative: str) -> bytes:
    """A regular file's bytes, each folder below `root` and the file itself opened without following a link."""
    *folders, name = relative.split("/")
    root_fd = open_root(root, may_be_link=True)  # the base's own folder is the operator's to place
    try:
        folder_fd = open_folder_below(root_fd, folders)
        try:
            # Non-blocking, so that a FIFO put in the file's place does not hang the refresh.
            file_fd = open_file_in(folder_fd, name, os.O_RDONLY | os.O_NONBLOCK)
        finally:
            os.close(folder_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFileError("a symbolic link (not followed)") from exc
        raise
    finally:
        os.close(root_fd)
    with os.fdopen(file_fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise UnreadableFileError("not a regular file")
        return file.read()


def _text_chunks(data: bytes, name: str, base: KnowledgeBaseConfig) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():
        return []
    chunking = FixedSizeChunking(chunk_size=base.chunk_size, overlap=base.chunk_overlap)
    documents = chunking.chunk(Document(content=text, name=name))
    return [document.content for document in documents if document.content.strip()]


def _reader_chunks(data: bytes, name: str, extension: str) -> list[str]:
    module_name, class_name, package = _READERS[extension]
    try:
        reader_class: Any = getattr(importlib.import_module(module_name), class_name)
    except ImportError as exc:
        raise UnreadableFileError(f"reading {extension} files needs the {package} package") from exc
    missing = reader_class.get_missing_read_time_packages()
    if missing:
        raise UnreadableFileError(f"reading {extension} files needs the {', '.join(missing)} package")
    content = io.BytesIO(data)
    content.name = name  # the readers name their documents, and tell spreadsheet formats apart, by it
    try:
        documents = reader_class().read(content)
    except Exception as exc:  # a reader's own parsing error is the file's problem, reported as its reason
        raise UnreadableFileError(f"{class_name} failed: {exc}") from exc
    chunks = [document.content for document in documents or () if (document.content or "").strip()]
    if not chunks:
        raise UnreadableFileError(f"{class_name} found no text in it")
    return chunks


def file_chunks(root: Path, file: BaseFile, base: KnowledgeBaseConfig) -> list[str]:
    """The text of one file in chunks; `UnreadableFileError` says why a file cannot be indexed."""
    if file.size > MAX_FILE_BYTES:
        raise UnreadableFileError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    name = file.path.rsplit("/", 1)[-1]
    extension = Path(name).suffix.lower()
    try:
        data = _read_inside(root, file.path)
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc)) from exc
    if extension in _READERS:
        return _reader_chunks(data, name, extension)
    return _text_chunks(data, name, base)
