"""The built-in shell tool: only allowlisted executables, no shell, in the workspace, cut off at the timeout."""

import asyncio
import secrets
import sys

import pytest

from mindroom.config.main import ShellToolConfig, ToolsConfig
from mindroom.tool_system.shell import run_command, shell_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError
from tests.tool_system.test_shell_sandbox import gone_within

pytestmark = pytest.mark.asyncio


# The test interpreter lives outside the system folders: show it inside the sandbox.
PYTHON_PATHS = sorted({sys.prefix, sys.base_prefix})


def settings(*allowed, **extra):
    return ShellToolConfig(allowed_commands=list(allowed), readonly_paths=PYTHON_PATHS, **extra)


async def test_shell_runs_an_allowed_command_in_the_workspace(tmp_path):
    workspace = tmp_path / "ws"

    output = await run_command("pwd", workspace, settings("pwd"))

    assert output == f"exit code: 0\n{workspace.resolve()}\n"


async def test_shell_reports_the_exit_code_and_stderr(tmp_path):
    output = await run_command("ls no-such-file", tmp_path, settings("ls"))

    assert output.startswith("exit code: 2\n")
    assert "no-such-file" in output


async def test_shell_refuses_commands_not_on_the_allowlist(tmp_path):
    with pytest.raises(ToolError, match="'rm' is not an allowed command"):
        await run_command("rm -rf /", tmp_path, settings("ls", "echo"))
    with pytest.raises(ToolError, match="no commands are allowed"):
        await run_command("ls", tmp_path, settings())
    with pytest.raises(ToolError, match="not an allowed command"):
        await run_command("/bin/ls", tmp_path, settings("ls"))


async def test_shell_does_no_interpolation(tmp_path):
    output = await run_command("echo $HOME; rm -rf / | cat `id` *", tmp_path, settings("echo"))

    assert output == "exit code: 0\n$HOME; rm -rf / | cat `id` *\n"


async def test_shell_quotes_arguments_like_a_shell_would_split_them(tmp_path):
    output = await run_command("echo 'two words' \"and more\"", tmp_path, settings("echo"))

    assert output == "exit code: 0\ntwo words and more\n"


async def test_shell_gives_the_child_no_daemon_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")

    output = await run_command("env", tmp_path, settings("env"))

    assert "sk-should-not-leak" not in output
    assert "HOME=" in output
    assert f"HOME={tmp_path}\n" not in output


async def test_shell_kills_commands_at_the_timeout(tmp_path):
    marker = f"1000.{secrets.randbelow(10**9):09d}"  # a sleep no other process runs

    with pytest.raises(ToolError, match=r"timed out after 0\.3 s"):
        # The guard only keeps a broken timeout from hanging the suite; the command would sleep 1000 s.
        await asyncio.wait_for(run_command(f"sleep {marker}", tmp_path, settings("sleep", timeout_s=0.3)), 120)

    assert gone_within(marker), "the command outlived its timeout"


async def test_shell_timeout_keeps_partial_output(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import sys, time\nprint('started', flush=True)\ntime.sleep(30)\n")

    with pytest.raises(ToolError, match="started"):
        await run_command(f"{sys.executable} slow.py", tmp_path, settings(sys.executable, timeout_s=5))


async def test_shell_keeps_the_end_of_long_output(tmp_path):
    script = tmp_path / "loud.py"
    script.write_text("print('x' * 100000)\nprint('the end')\n")

    output = await run_command(f"{sys.executable} loud.py", tmp_path, settings(sys.executable, max_output_chars=100))

    assert output.startswith("exit code: 0\n[earlier output cut; the last 100 characters follow]\n")
    assert output.endswith("x\nthe end\n") and len(output) < 200


async def test_shell_takes_mindrooms_parameters_a_list_the_last_lines_and_a_shorter_timeout(tmp_path):
    script = tmp_path / "lines.py"
    script.write_text("import sys\nfor i in range(1, 11): print('line', i)\nsys.argv[1:] and print(sys.argv[1])\n")
    allowed = settings(sys.executable, timeout_s=5)

    whole = await run_command([sys.executable, "lines.py", "two words; $HOME"], tmp_path, allowed)
    last = await run_command([sys.executable, "lines.py"], tmp_path, allowed, tail=3)

    assert whole.endswith("line 10\ntwo words; $HOME\n")  # a list item is one argument, as given
    assert last == "exit code: 0\n[earlier output cut; the last 22 characters follow]\nline 8\nline 9\nline 10\n"
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(30)\n")
    with pytest.raises(ToolError, match=r"timed out after 0\.5 s"):
        await run_command([sys.executable, "slow.py"], tmp_path, allowed, timeout_s=0.5)
    with pytest.raises(ToolError, match="timed out after 1 s"):  # never past the configured limit
        await run_command([sys.executable, "slow.py"], tmp_path, settings(sys.executable, timeout_s=1), timeout_s=60)
    with pytest.raises(ToolError, match="must all be text"):
        await run_command([sys.executable, 3], tmp_path, allowed)  # type: ignore[list-item]
    with pytest.raises(ToolError, match="empty"):
        await run_command([], tmp_path, allowed)


async def test_shell_refuses_unparseable_and_empty_commands(tmp_path):
    with pytest.raises(ToolError, match="cannot parse"):
        await run_command("echo 'unterminated", tmp_path, settings("echo"))
    with pytest.raises(ToolError, match="empty"):
        await run_command("   ", tmp_path, settings("echo"))


async def test_shell_tool_describes_its_allowlist(tmp_path):
    env = AgentToolEnvironment("a", tmp_path, ToolsConfig(shell=settings("ls", "git", timeout_s=5)))
    (spec,) = shell_tools(env)

    assert spec.name == "run_shell_command"
    assert "Allowed programs: ls, git. Time limit: 5 s." in (spec.description or "")
    assert (await spec.function("ls")).startswith("exit code: 0")
