"""The shell tool on both event loops the daemon can run on (asyncio's and uvloop)."""

import asyncio
import os
import sys

import pytest

from mindroom.config.main import ShellToolConfig
from mindroom.daemon.event_loop import loop_factory
from mindroom.tool_system.shell import run_command

PYTHON_PATHS = sorted({sys.prefix, sys.base_prefix})


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_shell_files_are_private_on_either_event_loop(tmp_path, loop_name):
    """The daemon runs on uvloop, whose process spawn takes no `umask`: the command's files stay 0600 anyway."""
    workspace = tmp_path / "ws"
    settings = ShellToolConfig(allowed_commands=["touch"], readonly_paths=PYTHON_PATHS)
    factory = loop_factory() if loop_name == "uvloop" else asyncio.new_event_loop
    old = os.umask(0o022)  # a permissive process umask: only the spawn option can make the file private
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            loop_type = runner.get_loop().__class__.__module__
            output = runner.run(run_command("touch made-here", workspace, settings))
    finally:
        os.umask(old)

    assert loop_type.startswith(loop_name)
    assert output == "exit code: 0\n"
    assert (workspace / "made-here").stat().st_mode & 0o777 == 0o600
