"""The built-in file tool: reads, writes and lists stay inside the agent's workspace."""

import contextlib
import os
import threading
import time

import pytest

from mindroom.config.main import FileToolConfig, ToolsConfig
from mindroom.tool_system.file_tools import file_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, workspace_dir


@pytest.fixture
def workspace(tmp_path):
    return workspace_dir(tmp_path, "helper")


def tools(workspace, **settings):
    env = AgentToolEnvironment(
        agent_name="helper", workspace=workspace, settings=ToolsConfig(file=FileToolConfig(**settings))
    )
    return {spec.name: spec.function for spec in file_tools(env)}


def test_workspace_dir_is_per_agent_under_storage_root(tmp_path):
    assert workspace_dir(tmp_path, "helper") == tmp_path.resolve() / "agents" / "helper" / "workspace"  # as MindRoom


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
    (outside_dir / "inner.txt").write_text("outside")
    workspace.mkdir(parents=True)
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "linkdir").symlink_to(outside_dir)
    (workspace / "dangling").symlink_to(tmp_path / "not-yet")
    tool = tools(workspace)

    with pytest.raises(ToolError, match=r"'link\.txt' is a link"):
        tool["read_file"]("link.txt")
    with pytest.raises(ToolError, match=r"'link\.txt' is a link"):
        tool["write_file"]("link.txt", "overwritten")
    with pytest.raises(ToolError, match="'linkdir' is a link"):
        tool["write_file"]("linkdir/new.txt", "planted")
    with pytest.raises(ToolError, match="'linkdir' is a link"):
        tool["read_file"]("linkdir/inner.txt")
    with pytest.raises(ToolError, match="'dangling' is a link"):
        tool["write_file"]("dangling", "planted")
    with pytest.raises(ToolError, match="'linkdir' is a link"):
        tool["list_files"]("linkdir")

    assert secret.read_text() == "top secret"
    assert [p.name for p in outside_dir.iterdir()] == ["inner.txt"]
    assert not (tmp_path / "not-yet").exists()
    listing = tool["list_files"]()
    assert "link.txt (link)" in listing and "linkdir (link)" in listing


def test_file_tools_do_not_follow_links_that_stay_inside_either(workspace):
    tool = tools(workspace)
    tool["write_file"]("real/file.txt", "inside")
    (workspace / "alias.txt").symlink_to(workspace / "real" / "file.txt")
    (workspace / "aliasdir").symlink_to("real")

    with pytest.raises(ToolError, match="is a link"):
        tool["read_file"]("alias.txt")
    with pytest.raises(ToolError, match="is a link"):
        tool["read_file"]("aliasdir/file.txt")
    with pytest.raises(ToolError, match="is a link"):
        tool["write_file"]("aliasdir/other.txt", "x")
    assert (workspace / "real" / "file.txt").read_text() == "inside"


def test_file_tools_refuse_hard_links_to_files_outside(workspace, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("the registration secret")
    workspace.mkdir(parents=True)
    os.link(outside, workspace / "innocent.txt")
    tool = tools(workspace)

    with pytest.raises(ToolError, match="other hard links"):
        tool["read_file"]("innocent.txt")
    with pytest.raises(ToolError, match="other hard links"):
        tool["write_file"]("innocent.txt", "overwritten")
    with pytest.raises(ToolError, match="other hard links"):
        tool["write_file"]("innocent.txt", "appended", append=True)

    assert outside.read_text() == "the registration secret"


def _within(seconds, call):
    """Run `call` in a daemon thread; fail (instead of hanging the suite) if it has not returned in time."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the call was still blocked after {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_file_tools_never_block_on_a_fifo(workspace):
    workspace.mkdir(parents=True)
    os.mkfifo(workspace / "pipe")
    tool = tools(workspace)

    with pytest.raises(ToolError, match="'pipe' is not a regular file"):
        _within(5, lambda: tool["read_file"]("pipe"))
    with pytest.raises(ToolError, match="'pipe' is not a regular file"):
        _within(5, lambda: tool["write_file"]("pipe", "x"))
    assert _within(5, lambda: tool["list_files"]()) == "pipe (not a regular file)"


def test_file_tools_refuse_a_fifo_even_with_a_reader_on_it(workspace):
    workspace.mkdir(parents=True)
    os.mkfifo(workspace / "pipe")
    reader = os.open(workspace / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(ToolError, match="not a regular file"):
            _within(5, lambda: tools(workspace)["write_file"]("pipe", "x"))
    finally:
        os.close(reader)


def test_file_tools_refuse_a_folder_swapped_for_a_link_between_calls(workspace, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.txt").write_text("outside")
    tool = tools(workspace)
    assert tool["write_file"]("notes/a.txt", "inside") == "wrote 6 bytes to notes/a.txt"

    (workspace / "notes" / "a.txt").unlink()
    (workspace / "notes").rmdir()
    (workspace / "notes").symlink_to(outside)

    with pytest.raises(ToolError, match="'notes' is a link"):
        tool["write_file"]("notes/b.txt", "planted")
    with pytest.raises(ToolError, match="'notes' is a link"):
        tool["read_file"]("notes/a.txt")
    with pytest.raises(ToolError, match="'notes' is a link"):
        tool["write_file"]("notes/deeper/c.txt", "planted")
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]


def test_file_tools_never_write_outside_while_a_folder_flips_to_a_link(workspace, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    workspace.mkdir(parents=True)
    (workspace / "notes").mkdir()
    tool = tools(workspace)
    stop = threading.Event()

    def flip():
        notes, parked = workspace / "notes", workspace / "parked"
        while not stop.is_set():
            # write_file may recreate `notes` while it is away, so any step may fail: keep flipping regardless.
            for step in (lambda: notes.rename(parked), lambda: notes.symlink_to(outside)):
                with contextlib.suppress(OSError):
                    step()
            for step in (notes.unlink, lambda: parked.rename(notes)):
                with contextlib.suppress(OSError):
                    step()

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    deadline = time.monotonic() + 1.5
    written = refused = 0
    try:
        while time.monotonic() < deadline:
            try:
                tool["write_file"]("notes/x.txt", "planted")
                written += 1
            except ToolError:
                refused += 1
    finally:
        stop.set()
        flipper.join(5)

    assert list(outside.iterdir()) == []
    assert written + refused > 100


def test_file_tools_hold_writes_to_the_workspace_quota(workspace):
    tool = tools(workspace, workspace_quota_bytes=100)

    assert tool["write_file"]("a.txt", "x" * 60) == "wrote 60 bytes to a.txt"
    with pytest.raises(ToolError, match=r"would bring your workspace to 110 bytes, over its quota of 100 bytes"):
        tool["write_file"]("sub/b.txt", "y" * 50)
    with pytest.raises(ToolError, match="over its quota"):
        tool["write_file"]("a.txt", "z" * 41, append=True)
    assert tool["write_file"]("a.txt", "w" * 90) == "wrote 90 bytes to a.txt"  # replacing frees the old size

    assert not (workspace / "sub" / "b.txt").exists()
    assert (workspace / "a.txt").read_text() == "w" * 90


def test_file_tools_quota_defaults_to_100_mib():
    assert FileToolConfig().workspace_quota_bytes == 100 * 1024 * 1024


def test_file_tools_run_off_the_event_loop(workspace):
    env = AgentToolEnvironment(agent_name="helper", workspace=workspace)

    assert all(spec.in_thread for spec in file_tools(env))


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
