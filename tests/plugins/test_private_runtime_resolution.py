"""`mindroom.runtime_resolution` for a private agent, as MindRoom plugins call it: the requester's copy (its
state root and the workspace in it), different for each requester, refused without one."""

from __future__ import annotations

import pytest

from mindroom.config.agent import AgentConfig, AgentPrivateConfig
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.runtime_resolution import resolve_agent_runtime, resolve_agent_storage
from mindroom.state.private_roots import private_state_root
from mindroom.tool_system.runtime_context import ToolExecutionIdentity


def test_runtime_resolution_of_a_private_agent_is_the_requesters_copy(tmp_path):
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "SOUL.md").write_text("hi")
    private = AgentPrivateConfig(per="user_agent", root="home", template_dir="seed")
    config = Config(agents={"buddy": AgentConfig(display_name="Buddy", private=private, memory_backend="file")})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    alice = ToolExecutionIdentity("matrix", "buddy", "@alice:hs", "!r", "$t", "$t", "s1")
    bob = ToolExecutionIdentity("matrix", "buddy", "@bob:hs", "!r", "$t", "$t", "s2")

    runtime = resolve_agent_runtime("buddy", config, paths, alice, create=True)
    other = resolve_agent_runtime("buddy", config, paths, bob)

    state = private_state_root(paths.storage_root, "user_agent", "@alice:hs", "buddy")
    assert runtime.execution.is_private and runtime.execution.execution_scope == "user_agent"
    assert runtime.state_root == state and runtime.session_state_root == (tmp_path / "data" / "sessions").resolve()
    assert runtime.workspace is not None and runtime.tool_base_dir == state / "home" == runtime.file_memory_root
    assert (state / "home" / "SOUL.md").read_text() == "hi"
    assert other.tool_base_dir is not None and other.tool_base_dir != runtime.tool_base_dir
    assert not other.tool_base_dir.exists()  # not created without `create`
    no_requester = ToolExecutionIdentity("matrix", "buddy", None, "!r", "$t", "$t", "s3")
    for identity in (None, no_requester):
        with pytest.raises(ValueError, match=r"agents\.buddy\.private"):
            resolve_agent_storage("buddy", config, paths, identity)
