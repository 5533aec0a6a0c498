"""The path helpers of the plugin API: confined to a root, never following a symlink."""

import os
from pathlib import Path, PurePosixPath

import pytest

from mindroom.plugin_api import (
    ToolFileAccess,
    open_directory_within_root,
    read_regular_file_within_root,
    resolve_agent_file,
    write_file_within_root,
)
from mindroom.tool_system.path_confinement import PathConfinementError


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return root


def test_write_then_read_makes_folders_with_private_file_mode(root):
    written = write_file_within_root(root, "notes/2026/today.md", "hello")

    assert written == root / "notes" / "2026" / "today.md"
    assert read_regular_file_within_root(root, "notes/2026/today.md") == b"hello"
    assert (written.stat().st_mode & 0o777) == 0o600


def test_write_exclusive_refuses_an_existing_file(root):
    write_file_within_root(root, "a.txt", b"one")

    with pytest.raises(FileExistsError):
        write_file_within_root(root, "a.txt", b"two", exclusive=True)
    write_file_within_root(root, "a.txt", b"two")
    assert read_regular_file_within_root(root, "a.txt") == b"two"


@pytest.mark.parametrize("bad", ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "", "a\x00b"])
def test_paths_that_leave_the_root_are_refused(root, bad):
    with pytest.raises(PathConfinementError):
        read_regular_file_within_root(root, bad)
    with pytest.raises(PathConfinementError):
        write_file_within_root(root, bad, "x")


def test_a_symlinked_file_is_neither_read_nor_written_through(root, tmp_path):
    os.symlink(tmp_path / "outside.txt", root / "link.txt")

    with pytest.raises(PathConfinementError, match="symlink"):
        read_regular_file_within_root(root, "link.txt")
    with pytest.raises(PathConfinementError, match="symlink"):
        write_file_within_root(root, "link.txt", "overwritten")
    assert (tmp_path / "outside.txt").read_text() == "secret"


def test_a_symlinked_folder_on_the_way_is_refused(root, tmp_path):
    os.symlink(tmp_path, root / "escape")

    with pytest.raises(PathConfinementError, match="symlink"):
        read_regular_file_within_root(root, "escape/outside.txt")
    with pytest.raises(PathConfinementError, match="symlink"):
        write_file_within_root(root, "escape/new.txt", "x")
    with pytest.raises(PathConfinementError), open_directory_within_root(root, "escape"):
        pass
    assert not (tmp_path / "new.txt").exists()


def test_read_size_limit_and_truncation(root):
    write_file_within_root(root, "big.bin", b"x" * 100)

    with pytest.raises(PathConfinementError, match="larger"):
        read_regular_file_within_root(root, "big.bin", max_bytes=10)
    assert read_regular_file_within_root(root, "big.bin", max_bytes=10, truncate=True) == b"x" * 10


def test_read_refuses_what_is_not_a_regular_file(root):
    (root / "folder").mkdir()
    os.mkfifo(root / "pipe")

    with pytest.raises((PathConfinementError, IsADirectoryError)):
        read_regular_file_within_root(root, "folder")
    with pytest.raises(PathConfinementError, match="regular"):
        read_regular_file_within_root(root, "pipe")


def test_open_directory_yields_a_descriptor_and_can_create(root):
    with open_directory_within_root(root, "made/here", create=True, mode=0o700) as fd:
        assert isinstance(fd, int)
        os.mkdir("inner", dir_fd=fd)
    assert (root / "made" / "here" / "inner").is_dir()
    with pytest.raises(FileNotFoundError), open_directory_within_root(root, "missing"):
        pass
    with open_directory_within_root(root) as fd:
        assert "made" in os.listdir(fd)


# -- resolve_agent_file ---------------------------------------------------------------------------------------


def test_resolve_agent_file_confines_agent_paths_to_the_workspace(root):
    relative = resolve_agent_file("docs/a.md", workspace_root=root, file_access=ToolFileAccess.AGENT, field_name="path")
    absolute = resolve_agent_file(str(root / "b.md"), workspace_root=root, file_access="agent", field_name="path")

    assert relative.path == root / "docs" / "a.md"
    assert relative.relative_path == PurePosixPath("docs/a.md")
    assert absolute.relative_path == PurePosixPath("b.md")
    for bad in ("../outside.txt", "/etc/passwd", ""):
        with pytest.raises(PathConfinementError, match="path"):
            resolve_agent_file(bad, workspace_root=root, file_access=ToolFileAccess.AGENT, field_name="path")


def test_resolve_agent_file_refuses_symlinks_on_the_way(root, tmp_path):
    os.symlink(tmp_path, root / "escape")

    with pytest.raises(PathConfinementError, match="symlink"):
        resolve_agent_file("escape/outside.txt", workspace_root=root, file_access="agent", field_name="source")


def test_resolve_agent_file_for_tools_taking_no_paths_or_unconfined(root):
    with pytest.raises(PathConfinementError, match="no file paths"):
        resolve_agent_file("a.txt", workspace_root=root, file_access=ToolFileAccess.NONE, field_name="path")
    free = resolve_agent_file("/etc/hosts", workspace_root=root, file_access="unconfined", field_name="path")

    assert free.path == Path("/etc/hosts")
    assert free.root is None
