"""The built-in file tool: reads, writes and lists stay inside the agent's workspace."""

import os

import pytest

from mindroom.config.main import FileToolConfig, ToolsConfig
from mindroom.tool_system.file_tools import file_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, workspace_dir


@pytest.fixture
def workspace(tmp_path):
    return tmp_path / "workspaces" / "helper"


def tools(workspace, **settings):
    env = AgentToolEnvironment(
        agent_name="helper", workspace=workspace, settings=ToolsConfig(file=FileToolConfig(**settings))
    )
    return {spec.name: spec.function for spec in file_tools(env)}


def test_workspace_dir_is_per_agent_under_storage_root(tmp_path):
    assert workspace_dir(tmp_path, "helper") == tmp_path.resolve() / "workspaces" / "helper"


def test_file_tools_write_read_and_list_round_trip(workspace):
    tool = tools(workspace)

    assert tool["write_file"]("notes/todo.md", "buy milk") == "wrote 8 bytes to notes/todo.md"
    assert tool["write_file"]("notes/todo.md", "\nbuy eggs", append=True) == "appended 9 bytes to notes/todo.md"

    assert tool["read_file"]("notes/todo.md") == "buy milk\nbuy eggs"
    assert (workspace / "notes" / "todo.md").read_text() == "buy milk\nbuy eggs"
    assert tool["list_files"]() == "notes/"
    assert tool["list_files"]("notes") == "todo.md (17 bytes)"
    assert tool["list_files"]("notes/../notes") == "todo.md (17 bytes)"


@pytest.mark.parametrize("path", ["../outside.txt", "notes/../../outside.txt", "../helper2/x", ".."])
def test_file_tools_refuse_dotdot_escapes(workspace, path):
    tool = tools(workspace)
    workspace.mkdir(parents=True)
    (workspace.parent / "outside.txt").write_text("secret")

    for name, call in [
        ("read_file", lambda: tool["read_file"](path)),
        ("write", lambda: tool["write_file"](path, "x")),
    ]:
        with pytest.raises(ToolError, match="outside your workspace"):
            call()
    assert (workspace.parent / "outside.txt").read_text() == "secret"


@pytest.mark.parametrize("path", ["/etc/passwd", "~/secret"])
def test_file_tools_refuse_absolute_paths(workspace, path):
    with pytest.raises(ToolError, match="not relative"):
        tools(workspace)["read_file"](path)


def test_file_tools_refuse_absolute_path_into_the_workspace_too(workspace):
    tool = tools(workspace)
    tool["write_file"]("a.txt", "x")

    with pytest.raises(ToolError, match="not relative"):
        tool["read_file"](str(workspace / "a.txt"))


def test_file_tools_do_not_follow_symlinks_out_of_the_workspace(workspace, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    workspace.mkdir(parents=True)
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "linkdir").symlink_to(outside_dir)
    (workspace / "dangling").symlink_to(tmp_path / "not-yet")
    tool = tools(workspace)

    with pytest.raises(ToolError, match="outside your workspace"):
        tool["read_file"]("link.txt")
    with pytest.raises(ToolError, match="outside your workspace"):
        tool["write_file"]("link.txt", "overwritten")
    with pytest.raises(ToolError, match="outside your workspace"):
        tool["write_file"]("linkdir/new.txt", "planted")
    with pytest.raises(ToolError, match="outside your workspace"):
        tool["write_file"]("dangling", "planted")
    with pytest.raises(ToolError, match="outside your workspace"):
        tool["list_files"]("linkdir")

    assert secret.read_text() == "top secret"
    assert list(outside_dir.iterdir()) == []
    assert not (tmp_path / "not-yet").exists()
    listing = tool["list_files"]()
    assert "link.txt (link)" in listing and "linkdir (link)" in listing


def test_file_tools_follow_symlinks_that_stay_inside(workspace):
    tool = tools(workspace)
    tool["write_file"]("real.txt", "inside")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")

    assert tool["read_file"]("alias.txt") == "inside"
    assert tool["write_file"]("alias.txt", "changed") == "wrote 7 bytes to real.txt"
    assert (workspace / "real.txt").read_text() == "changed"


def test_file_tools_enforce_size_limits(workspace):
    tool = tools(workspace, max_read_bytes=10, max_write_bytes=20)
    tool["write_file"]("big.txt", "0123456789abcdef")

    assert tool["read_file"]("big.txt").startswith("0123456789\n[truncated: showing the first 10 of 16 bytes]")
    with pytest.raises(ToolError, match="byte limit"):
        tool["write_file"]("huge.txt", "x" * 21)


def test_file_tools_report_missing_files_and_folders(workspace):
    tool = tools(workspace)

    with pytest.raises(ToolError, match="no file named"):
        tool["read_file"]("missing.txt")
    with pytest.raises(ToolError, match="no folder named"):
        tool["list_files"]("missing")
    with pytest.raises(ToolError, match="is a folder"):
        tool["write_file"](".", "x")
    assert tool["list_files"]() == ". is empty"


def test_file_tools_refuse_binary_files(workspace):
    workspace.mkdir(parents=True)
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")

    with pytest.raises(ToolError, match="binary"):
        tools(workspace)["read_file"]("blob.bin")


def test_file_tools_create_private_files(workspace):
    tools(workspace)["write_file"]("x.txt", "x")

    assert os.stat(workspace / "x.txt").st_mode & 0o777 == 0o600
    assert os.stat(workspace).st_mode & 0o777 == 0o700
