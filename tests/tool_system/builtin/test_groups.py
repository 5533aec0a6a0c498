"""The groups of built-in tools that reach the daemon's parts: each gives the functions its entry names, under
MindRoom's names, and no group's module is loaded before an agent's tools are built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mindroom.tool_system.builtin.groups import DAEMON_PART_GROUPS, GROUP_FUNCTIONS
from mindroom.tool_system.spec import AgentToolEnvironment


@pytest.mark.parametrize("provider", DAEMON_PART_GROUPS, ids=lambda provider: provider.name)
def test_groups_build_the_functions_they_name(provider, tmp_path: Path):
    specs = provider.build(AgentToolEnvironment("helper", tmp_path / "workspace"))

    assert tuple(spec.name for spec in specs) == provider.tool_names == GROUP_FUNCTIONS[provider.name][1]
    assert all(spec.function.__doc__ or spec.description for spec in specs)


def test_groups_load_no_tool_module_until_built():
    code = (
        "import sys, mindroom.tool_system.builtin.groups; "
        "print(sorted(m for m in sys.modules if m.startswith('mindroom.tool_system.builtin.') and "
        "not m.endswith('.groups')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    assert loaded == "[]"
