"""The shell tool applies `tool:environment` changes to the commands it runs, in and out of the sandbox."""

import shutil
import sys
from types import MappingProxyType

import pytest

from mindroom.config.main import ShellToolConfig
from mindroom.hooks.context import ToolEnvironment
from mindroom.tool_system.shell import run_command
from mindroom.tool_system.tool_hooks import bind_tool_environment

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
BOTH = pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "none"])


def settings(sandbox: str) -> ShellToolConfig:
    return ShellToolConfig(allowed_commands=["env"], sandbox=sandbox, readonly_paths=sorted({sys.prefix}))


def variables(output: str) -> dict[str, str]:
    lines = output.split("\n", 1)[1].splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@BOTH
@pytest.mark.asyncio
async def test_shell_command_sees_the_hooks_variables(tmp_path, sandbox):
    changes = ToolEnvironment(MappingProxyType({"MINDROOM_HOOK_TOKEN": "from-the-hook", "HOME": "/elsewhere"}))

    with bind_tool_environment(changes):
        seen = variables(await run_command("env", tmp_path / "ws", settings(sandbox)))
    plain = variables(await run_command("env", tmp_path / "ws", settings(sandbox)))

    assert seen["MINDROOM_HOOK_TOKEN"] == "from-the-hook"
    assert seen["HOME"] != "/elsewhere"  # HOME stays the sandbox's own
    assert "MINDROOM_HOOK_TOKEN" not in plain


@BOTH
@pytest.mark.asyncio
async def test_shell_command_loses_a_variable_a_hook_unsets(tmp_path, sandbox):
    with bind_tool_environment(ToolEnvironment(unset=frozenset({"LANG"}))):
        seen = variables(await run_command("env", tmp_path / "ws", settings(sandbox)))

    assert "LANG" not in seen
    assert "PATH" in seen
