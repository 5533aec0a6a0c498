"""The shell tool of a private agent's copy: the sandbox covers the data directory around it, so one
requester's command reaches neither another requester's copy nor the rest of the data directory."""

import shutil
import sys

import pytest

from mindroom.config.agent import AgentPrivateConfig
from mindroom.config.main import ShellToolConfig, ToolsConfig
from mindroom.state.private_roots import ensure_private_workspace, requester_workspace
from mindroom.tool_system.shell import shell_tools
from mindroom.tool_system.spec import AgentToolEnvironment
from mindroom.tool_system.workspace_layout import data_root_of

PYTHON_PATHS = sorted({sys.prefix, sys.base_prefix})


def test_data_root_of_a_private_copy_is_the_data_directory(tmp_path):
    for per, root in (
        ("user", None),
        ("user_agent", "notes/deep"),
        ("user", "private_instances/notes"),
        ("user", "agents/x/workspace"),
    ):
        private = AgentPrivateConfig(per=per, root=root)
        assert data_root_of(requester_workspace(tmp_path, "buddy", private, "@alice:hs")) == tmp_path.resolve()
    # Near misses: a folder named like the layout's but not it shows nothing to hide.
    assert data_root_of(tmp_path / "private_instance" / "user-1" / "buddy" / "buddy_data") is None
    assert data_root_of(tmp_path / "agents" / "buddy" / "buddy_data") is None


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.asyncio
async def test_private_shell_cannot_reach_another_requesters_copy(tmp_path):
    data = tmp_path / "data"
    private = AgentPrivateConfig(per="user")
    alice = ensure_private_workspace(requester_workspace(data, "buddy", private, "@alice:hs"))
    bob = ensure_private_workspace(requester_workspace(data, "buddy", private, "@bob:hs"))
    (bob / "diary.md").write_text("bob's secret")
    (alice / "mine.md").write_text("alice's note")
    # Even with a folder above the data directory shown read-only, the other copy stays covered.
    shown = [*PYTHON_PATHS, str(tmp_path)]
    config = ShellToolConfig(allowed_commands=["cat", "ls"], sandbox="bwrap", readonly_paths=shown)
    (spec,) = shell_tools(AgentToolEnvironment("buddy", alice, ToolsConfig(shell=config)))
    relative = bob.relative_to(alice.parent.parent.parent)

    by_path = await spec.function(f"cat {bob / 'diary.md'}")
    by_relative = await spec.function(f"cat ../../../{relative}/diary.md")
    own = await spec.function("cat mine.md")

    assert "bob's secret" not in by_path + by_relative
    assert by_path.startswith("exit code: 1") and by_relative.startswith("exit code: 1")
    assert own == "exit code: 0\nalice's note"
