"""The shell tool's sandbox, with real processes: what a command can see, and that nothing it starts survives.

`bwrap` cases run bubblewrap (CI installs it); `none` cases run the fallback every machine has.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.config.main import ShellToolConfig, ToolsConfig
from mindroom.tool_system.sandbox import launch as sandbox_module
from mindroom.tool_system.shell import run_command, shell_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, workspace_dir

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
BOTH = pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "none"])
PYTHON_PATHS = sorted({sys.prefix, sys.base_prefix})
SECRET = "registration-shared-secret-" + secrets.token_hex(4)


@pytest.fixture
def data_dir(tmp_path):
    """A data directory as the daemon lays it out, with a homeserver secret next to the agents' folders."""
    data = tmp_path / "data"
    (data / "homeserver").mkdir(parents=True)
    (data / "homeserver" / "registration.yaml").write_text(f"registration_shared_secret: {SECRET}\n")
    return data


def shell(data_dir, *allowed, **extra):
    """The agent's `run_shell_command`, built the way the daemon builds it."""
    config = ShellToolConfig(allowed_commands=list(allowed), readonly_paths=PYTHON_PATHS, **extra)
    env = AgentToolEnvironment("helper", workspace_dir(data_dir, "helper"), ToolsConfig(shell=config))
    (spec,) = shell_tools(env)
    return spec.function


def workspace(data_dir) -> Path:
    return workspace_dir(data_dir, "helper")


def running(marker: str) -> list[int]:
    """Host pids whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def gone_within(marker: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while running(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def marker():
    """A `sleep` duration no other process uses; any survivor is killed after the test."""
    value = f"1000.{secrets.randbelow(10**9):09d}"
    yield value
    for pid in running(value):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


# A stand-in for the daemon: a process whose environment holds a secret from its start (as the daemon's
# does; /proc/<pid>/environ shows a process's initial environment), running one command with the shell tool.
DAEMON = """
import asyncio, json, os, sys
from pathlib import Path
from mindroom.config.main import ShellToolConfig, ToolsConfig
from mindroom.tool_system.shell import shell_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError
args = json.loads(sys.argv[1])
pid = str(os.getpid())
workspace = Path(args["workspace"])
workspace.mkdir(parents=True, exist_ok=True)
for name, text in args["files"].items():
    (workspace / name).write_text(text.replace("DAEMON_PID", pid))
env = AgentToolEnvironment("helper", workspace, ToolsConfig(shell=ShellToolConfig(**args["config"])))
(spec,) = shell_tools(env)
try:
    print("OUTPUT:" + asyncio.run(spec.function(args["command"].replace("DAEMON_PID", pid))))
except ToolError as exc:
    print("OUTPUT:ToolError: " + str(exc))
"""


def as_daemon(data_dir, command, *, files=None, within=60, **config):
    """What `command` prints when the shell tool of a daemon holding MINDROOM_TEST_SECRET runs it.

    A tool call still running after `within` seconds fails the test (the stand-in is killed).
    """
    config.setdefault("readonly_paths", PYTHON_PATHS)
    args = {"workspace": str(workspace(data_dir)), "files": files or {}, "config": config, "command": command}
    try:
        done = subprocess.run(
            [sys.executable, "-c", DAEMON, json.dumps(args)],
            env={**os.environ, "MINDROOM_TEST_SECRET": SECRET},
            capture_output=True,
            text=True,
            timeout=within,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the tool call had not returned after {within} s", pytrace=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.partition("OUTPUT:")[2]


READ_PARENT_ENVIRON = f"{sys.executable} -I -c 'import os; print(open(f\"/proc/{{os.getppid()}}/environ\").read())'"


@needs_bwrap
def test_shell_sandbox_hides_the_daemon_process_and_environment(data_dir):
    allowed = ["cat", sys.executable]

    daemon = as_daemon(data_dir, "cat /proc/DAEMON_PID/environ", allowed_commands=allowed, sandbox="bwrap")
    parent = as_daemon(data_dir, READ_PARENT_ENVIRON, allowed_commands=allowed, sandbox="bwrap")
    first = as_daemon(data_dir, "cat /proc/1/environ", allowed_commands=allowed, sandbox="bwrap")

    assert SECRET not in daemon + parent + first
    assert parent.startswith("exit code: 0") and first.startswith("exit code: 0")


@BOTH
def test_shell_command_parent_has_a_clean_environment(data_dir, sandbox):
    output = as_daemon(data_dir, READ_PARENT_ENVIRON, allowed_commands=[sys.executable], sandbox=sandbox)

    assert output.startswith("exit code: 0")
    assert SECRET not in output


@BOTH
def test_shell_sandbox_scrubs_the_environment(data_dir, sandbox):
    environment = as_daemon(data_dir, "env", allowed_commands=["env"], sandbox=sandbox)

    assert SECRET not in environment
    names = {line.split("=", 1)[0] for line in environment.splitlines()[1:] if "=" in line}
    assert names <= {"PATH", "LANG", "HOME", "PWD"}
    assert "HOME=" in environment


@needs_bwrap
@pytest.mark.parametrize("visible_parent", [False, True])
@pytest.mark.asyncio
async def test_shell_sandbox_hides_the_data_directory(data_dir, visible_parent):
    # Even with a folder above the data directory shown read-only, the data directory stays covered.
    extra = {"readonly_paths": [*PYTHON_PATHS, str(data_dir.parent)]} if visible_parent else {}
    config = ShellToolConfig(allowed_commands=["cat", "ls"], sandbox="bwrap", **(extra or {"readonly_paths": []}))
    env = AgentToolEnvironment("helper", workspace(data_dir), ToolsConfig(shell=config))
    (spec,) = shell_tools(env)
    secret_file = data_dir / "homeserver" / "registration.yaml"

    by_path = await spec.function(f"cat {secret_file}")
    relative = await spec.function("cat ../../../homeserver/registration.yaml")
    listing = await spec.function(f"ls -A {data_dir}")

    assert SECRET not in by_path + relative
    assert by_path.startswith("exit code: 1") and relative.startswith("exit code: 1")
    assert listing == "exit code: 0\nagents\n"


@BOTH
@pytest.mark.asyncio
async def test_shell_home_is_private_empty_and_not_the_workspace(data_dir, sandbox):
    run = shell(data_dir, sys.executable, sandbox=sandbox)
    probe = (
        f"{sys.executable} -I -c "
        '\'import os; home = os.environ["HOME"]; print(home, os.listdir(home), os.getcwd()); '
        'open(os.path.join(home, "left.txt"), "w").write("x")\''
    )

    first = (await run(probe)).splitlines()[1].split(" ")
    second = (await run(probe)).splitlines()[1].split(" ")

    home, listed, cwd = first
    assert listed == "[]" and second[1] == "[]"
    assert Path(cwd) == workspace(data_dir).resolve()
    assert Path(home) != Path(cwd) and Path(cwd) not in Path(home).parents
    assert not (workspace(data_dir) / "left.txt").exists()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git_repository(folder):
    """An empty repository at `folder`, where HOME pointed before (so its .gitconfig used to apply)."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


@needs_git
@BOTH
@pytest.mark.asyncio
async def test_shell_agent_written_gitconfig_does_not_run_under_git(data_dir, sandbox):
    folder = workspace(data_dir)
    git_repository(folder)
    (folder / ".gitconfig").write_text(
        '[alias]\n\tst = "!touch pwned-alias"\n'
        "[core]\n\tfsmonitor = touch pwned-fsmonitor\n\tpager = touch pwned-pager\n"
    )
    run = shell(data_dir, "git", sandbox=sandbox)

    status = await run("git status")
    alias = await run("git st")

    assert status.startswith("exit code: 0")
    assert "not a git command" in alias
    assert sorted(p.name for p in folder.glob("pwned-*")) == []


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@needs_bwrap
def test_shell_sandbox_confines_what_an_allowed_make_runs(data_dir):
    secret_file = data_dir / "homeserver" / "registration.yaml"
    makefile = (
        f"all:\n\t-cat {secret_file}\n\t-cat /proc/DAEMON_PID/environ\n\t-cat ../../homeserver/registration.yaml\n"
        "\techo recipe-ran\n"
    )

    output = as_daemon(data_dir, "make", files={"Makefile": makefile}, allowed_commands=["make"], sandbox="bwrap")

    assert "recipe-ran" in output  # make does run what the Makefile says: that is why it is sandboxed
    assert SECRET not in output


@BOTH
def test_shell_setsid_children_do_not_outlive_the_command(data_dir, sandbox, marker):
    if shutil.which("setsid") is None:
        pytest.skip("setsid is not installed")

    output = as_daemon(
        data_dir, f"setsid -f sleep {marker}", allowed_commands=["setsid"], sandbox=sandbox, timeout_s=30, within=120
    )

    assert output.startswith("exit code: 0")
    assert gone_within(marker, 30), f"a setsid child survived under sandbox={sandbox}"


@BOTH
def test_shell_detached_descendants_do_not_survive_the_timeout(data_dir, sandbox, marker):
    folder = workspace(data_dir)
    folder.mkdir(parents=True)
    (folder / "escape.py").write_text(
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "    os._exit(0)\n"
        "print('detached', flush=True)\n"
        "time.sleep(60)\n"
    )
    output = as_daemon(
        data_dir,
        f"{sys.executable} -I escape.py",
        allowed_commands=[sys.executable],
        sandbox=sandbox,
        timeout_s=5,  # time enough to print `detached` first on a loaded machine
        within=120,
    )

    assert output.startswith(f"ToolError: {sys.executable!r} timed out after 5 s and was stopped\ndetached")
    assert gone_within(marker, 30), f"a detached grandchild survived the timeout under sandbox={sandbox}"


@needs_bwrap
@pytest.mark.asyncio
async def test_shell_sandbox_has_no_network_unless_configured(data_dir):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    connect = f"{sys.executable} -I -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(1)'"
    try:
        closed = await shell(data_dir, sys.executable, sandbox="bwrap")(connect)
        shared = await shell(data_dir, sys.executable, sandbox="bwrap", network="host")(connect)
    finally:
        listener.close()

    assert not closed.startswith("exit code: 0")
    # Only the operator's explicit `network: host` reaches the host's loopback (sandbox/test_network.py).
    assert shared == "exit code: 0\n1\n"


@needs_bwrap
@pytest.mark.asyncio
async def test_shell_sandbox_refuses_an_allowed_executable_it_does_not_show(data_dir, tmp_path):
    program = tmp_path / "tools" / "hello"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho hello\n")
    program.chmod(0o755)
    config = ShellToolConfig(allowed_commands=[str(program)], sandbox="bwrap")

    with pytest.raises(ToolError, match="not inside the sandbox"):
        await run_command(str(program), tmp_path / "ws", config)

    shown = config.model_copy(update={"readonly_paths": [str(program.parent)]})
    assert await run_command(str(program), tmp_path / "ws", shown) == "exit code: 0\nhello\n"


@pytest.fixture
def no_bwrap_on_path(tmp_path, monkeypatch):
    """A PATH holding only `env`, so bwrap is not found; and the once-only notices forgotten."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "env").symlink_to(shutil.which("env"))
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(sandbox_module._Seen, "logged", set())
    return folder


@pytest.mark.asyncio
async def test_shell_sandbox_auto_refuses_without_bwrap_and_names_the_package(data_dir, no_bwrap_on_path):
    run = shell(data_dir, "env", sandbox="auto")

    with capture_logs() as logs:
        for _ in range(2):
            with pytest.raises(ToolError) as refused:
                await run("env")

    message = str(refused.value)
    assert message.startswith("shell commands are not run: tools.shell.sandbox is auto, but bwrap (bubblewrap)")
    assert "apt-get install bubblewrap" in message and "tools.shell.sandbox: none" in message
    errors = [log for log in logs if log["event"] == "sandboxed tools refused: their sandbox cannot run here"]
    assert len(errors) == 1 and errors[0]["setting"] == "tools.shell"
    assert not [log for log in logs if log["event"] == "tools run without a sandbox"]


@pytest.mark.asyncio
async def test_shell_sandbox_none_runs_without_bwrap_and_says_what_is_weaker(data_dir, no_bwrap_on_path):
    with capture_logs() as logs:
        output = await shell(data_dir, "env", sandbox="none")("env")

    assert output.startswith("exit code: 0\n") and "HOME=" in output and "HOME=/home/agent" not in output
    (warning,) = [log for log in logs if log["event"] == "tools run without a sandbox"]
    assert warning["log_level"] == "warning" and warning["reason"] == "tools.shell.sandbox is none"
    assert "data directory" in warning["weaker"] and "/proc" in warning["weaker"]


@pytest.mark.asyncio
async def test_shell_sandbox_bwrap_refuses_to_run_without_bwrap(data_dir, no_bwrap_on_path):
    with pytest.raises(ToolError, match=r"tools.shell.sandbox is bwrap, but bwrap \(bubblewrap\) is not installed"):
        await shell(data_dir, "env", sandbox="bwrap")("env")


@pytest.mark.asyncio
async def test_shell_sandbox_none_says_so_once(data_dir, monkeypatch):
    monkeypatch.setattr(sandbox_module._Seen, "logged", set())

    with capture_logs() as logs:
        await shell(data_dir, "env", sandbox="none")("env")
        await shell(data_dir, "env", sandbox="none")("env")

    reasons = [log["reason"] for log in logs if log["event"] == "tools run without a sandbox"]
    assert reasons == ["tools.shell.sandbox is none"]


@needs_bwrap
@pytest.mark.asyncio
async def test_shell_sandbox_auto_uses_bwrap_when_it_works(data_dir, monkeypatch):
    monkeypatch.setattr(sandbox_module._Seen, "logged", set())

    with capture_logs() as logs:
        output = await shell(data_dir, "env", sandbox="auto")("env")

    assert "HOME=/home/agent" in output
    assert [log["event"] for log in logs] == ["tools run in a bubblewrap sandbox"]


def test_shell_config_wants_absolute_readonly_paths():
    with pytest.raises(ValueError, match="must be absolute"):
        ShellToolConfig(readonly_paths=["relative/dir"])
    assert ShellToolConfig().sandbox == "auto"
