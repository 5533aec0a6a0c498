"""The one walk below a root: no link followed at any level, no `..`, and failures that name where they happened."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mindroom.tool_system.confined_open import open_file_in, open_folder_below, open_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "note.txt").write_text("inside")
    (root / "a" / "plain.txt").write_text("a file")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "note.txt").write_text("secret")
    return root


def _walk(root: Path, names: list[str], **options: object) -> list[str]:
    root_fd = open_root(root, may_be_link=False)
    try:
        folder = open_folder_below(root_fd, names, **options)  # type: ignore[arg-type]
        try:
            return sorted(os.listdir(folder))
        finally:
            os.close(folder)
    finally:
        os.close(root_fd)


def test_confined_open_walks_to_a_folder_and_opens_a_file_in_it(root: Path):
    assert _walk(root, ["a"]) == ["b", "plain.txt"]
    assert _walk(root, []) == ["a"]
    root_fd = open_root(root, may_be_link=False)
    folder = open_folder_below(root_fd, ["a", "b"])
    fd = open_file_in(folder, "note.txt", os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        assert handle.read() == b"inside"
    os.close(folder)
    os.close(root_fd)


@pytest.mark.parametrize("target", ["outside", "root/a"])  # out of the root, or back inside it: never followed
def test_confined_open_refuses_a_linked_folder_at_any_level_with_eloop_and_the_path_walked(root: Path, target: str):
    (root / "a" / "b" / "link").symlink_to(root.parent / target, target_is_directory=True)

    with pytest.raises(OSError, match="Too many levels") as refused:
        _walk(root, ["a", "b", "link"])

    assert refused.value.errno == errno.ELOOP  # Linux says ENOTDIR for a link opened as a folder
    assert refused.value.filename == "a/b/link"


def test_confined_open_names_a_file_on_the_way_and_a_missing_folder(root: Path):
    with pytest.raises(NotADirectoryError) as not_a_folder:
        _walk(root, ["a", "plain.txt", "c"])
    with pytest.raises(FileNotFoundError) as missing:
        _walk(root, ["a", "gone", "c"])

    assert not_a_folder.value.filename == "a/plain.txt"
    assert missing.value.filename == "a/gone"


def test_confined_open_creates_missing_folders_with_their_mode_but_never_through_a_link(root: Path):
    (root / "a" / "link").symlink_to(root.parent / "outside", target_is_directory=True)

    assert _walk(root, ["a", "new", "deeper"], create=True, mode=0o700) == []
    with pytest.raises(OSError) as refused:
        _walk(root, ["a", "link", "made"], create=True)

    assert (root / "a" / "new" / "deeper").stat().st_mode & 0o777 == 0o700
    assert refused.value.errno == errno.ELOOP
    assert not (root.parent / "outside" / "made").exists()


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "b\x00"])
def test_confined_open_refuses_a_name_that_is_not_one_entry(root: Path, name: str):
    with pytest.raises(ValueError, match="not the name of one entry"):
        _walk(root, ["a", name])


def test_confined_open_takes_names_that_only_look_like_dots(root: Path):
    (root / "a" / "...").mkdir()
    (root / "a" / "..x").mkdir()

    assert _walk(root, ["a", "..."]) == [] and _walk(root, ["a", "..x"]) == []


@pytest.mark.parametrize("flags", [os.O_RDONLY, os.O_WRONLY | os.O_CREAT | os.O_EXCL, os.O_WRONLY | os.O_TRUNC])
def test_confined_open_refuses_a_linked_file_however_it_is_opened(root: Path, flags: int):
    (root / "a" / "link.txt").symlink_to(root.parent / "outside" / "note.txt")
    (root / "a" / "dangling.txt").symlink_to(root.parent / "outside" / "new.txt")
    folder = open_folder_below(root_fd := open_root(root, may_be_link=False), ["a"])
    try:
        for name in ("link.txt", "dangling.txt"):
            with pytest.raises(OSError) as refused:
                open_file_in(folder, name, flags, walked=f"a/{name}")
            assert (refused.value.errno, refused.value.filename) == (errno.ELOOP, f"a/{name}")
    finally:
        os.close(folder)
        os.close(root_fd)
    assert (root.parent / "outside" / "note.txt").read_text() == "secret"
    assert not (root.parent / "outside" / "new.txt").exists()


def test_confined_open_a_linked_root_is_the_callers_choice(root: Path):
    linked = root.parent / "linked-root"
    linked.symlink_to(root, target_is_directory=True)

    with pytest.raises(OSError):
        open_root(linked, may_be_link=False)
    fd = open_root(linked, may_be_link=True)
    assert os.listdir(fd) == ["a"]
    os.close(fd)
