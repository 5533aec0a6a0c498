"""A private agent's state root per requester: named by a digest, never by the id's text; its workspace made
0700 on first use and seeded from the template once."""

from __future__ import annotations

import os
import stat

import pytest

from mindroom.config.agent import AgentConfig, AgentPrivateConfig
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.state.private_roots import (
    PRIVATE_INSTANCES_DIRNAME,
    ensure_private_workspace,
    private_scope_key,
    private_state_root,
    requester_workspace,
)
from mindroom.tool_system.worker_routing import private_instance_state_root_for_requester
from mindroom.workspaces import resolve_agent_workspace_from_state_path

ODD_IDS = ["@alice:hs", "@alice:hs ", "@Alice:hs", "@../../bob:hs", "@a/b:hs", "@a_b:hs", "@a.b:hs", "@ålice:hs"]


def test_private_scope_key_differs_per_requester_and_never_holds_the_id(tmp_path):
    keys = {private_scope_key("user", requester, "buddy") for requester in ODD_IDS}

    assert len(keys) == len(ODD_IDS)  # no two requesters share a folder, near misses included
    for requester in ODD_IDS:
        root = private_state_root(tmp_path, "user", requester, "buddy")
        assert root.parent.parent == (tmp_path / PRIVATE_INSTANCES_DIRNAME).resolve()
        assert root.name == "buddy" and root.parent.name.startswith("user-")
        assert "alice" not in root.parent.name.lower() and ".." not in root.parent.name


def test_private_scope_key_user_spans_agents_and_user_agent_does_not():
    assert private_scope_key("user", "@alice:hs", "buddy") == private_scope_key("user", "@alice:hs", "coach")
    assert private_scope_key("user_agent", "@alice:hs", "buddy") != private_scope_key(
        "user_agent", "@alice:hs", "coach"
    )
    assert private_scope_key("user_agent", "@alice:hs", "buddy") != private_scope_key("user", "@alice:hs", "buddy")
    # The encoding is unambiguous: a requester ending like an agent name is not another pair.
    assert private_scope_key("user_agent", "@a:hs", "b_c") != private_scope_key("user_agent", "@a:hs_b", "c")


@pytest.mark.parametrize(("per", "requester", "agent"), [("shared", "@a:hs", "x"), ("user", "", "x"),
                                                         ("user", "@a:hs", "../x"), ("user", "@a:hs", "a/b"),
                                                         ("user", "@a:hs", "..")])  # fmt: skip
def test_private_state_root_refuses_what_cannot_name_a_folder(tmp_path, per, requester, agent):
    with pytest.raises(ValueError):
        private_state_root(tmp_path, per, requester, agent)


def test_worker_routing_gives_the_private_root_for_a_private_scope_only(tmp_path):
    def root(scope, requester="@alice:hs"):
        return private_instance_state_root_for_requester(
            tmp_path, requester_id=requester, agent_name="buddy", worker_scope=scope, runtime_paths=None
        )

    assert root("user") == private_state_root(tmp_path, "user", "@alice:hs", "buddy")
    assert root("user") != root("user", "@bob:hs") and root("user") != root("user_agent")
    assert root(None) is None and root("shared") is None and root("user", "") is None


def test_ensure_private_workspace_seeds_once_without_links(tmp_path):
    template = tmp_path / "template"
    (template / "notes").mkdir(parents=True)
    (template / "SOUL.md").write_text("be kind", encoding="utf-8")
    (template / "notes" / "a.md").write_text("a", encoding="utf-8")
    (template / "secret-link").symlink_to("/etc/passwd")
    workspace = tmp_path / "state" / "buddy_data"

    ensure_private_workspace(workspace, template)
    (workspace / "SOUL.md").write_text("changed by the agent", encoding="utf-8")
    (template / "SOUL.md").write_text("template edited later", encoding="utf-8")
    ensure_private_workspace(workspace, template)

    assert (workspace / "SOUL.md").read_text(encoding="utf-8") == "changed by the agent"  # seeded once
    assert (workspace / "notes" / "a.md").read_text(encoding="utf-8") == "a"
    assert not os.path.lexists(workspace / "secret-link")
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o700
    assert [path.name for path in workspace.parent.iterdir()] == ["buddy_data"]  # no staging folder left


def test_ensure_private_workspace_refuses_a_link_in_its_place(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "buddy_data").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(ValueError, match="not a folder"):
        ensure_private_workspace(tmp_path / "state" / "buddy_data")


def test_workspace_of_a_private_agent_is_in_the_requesters_state_root(tmp_path):
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "SOUL.md").write_text("hello", encoding="utf-8")
    private = AgentPrivateConfig(per="user", template_dir="seed", context_files=["SOUL.md"])
    config = Config(
        agents={
            "buddy": AgentConfig(display_name="Buddy", private=private, memory_backend="file"),
            "plain": AgentConfig(display_name="Plain"),
        }
    )
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    state = private_state_root(paths.storage_root, "user", "@alice:hs", "buddy")

    resolved = resolve_agent_workspace_from_state_path(
        "buddy", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=True, create=True
    )

    assert resolved is not None and resolved.root == state / "buddy_data" == resolved.file_memory_path
    assert resolved.context_files == (state / "buddy_data" / "SOUL.md",)
    assert (state / "buddy_data" / "SOUL.md").read_text(encoding="utf-8") == "hello"
    with pytest.raises(ValueError, match=r"agents\.buddy\.private"):
        resolve_agent_workspace_from_state_path(
            "buddy", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=False
        )
    shared = resolve_agent_workspace_from_state_path(
        "plain", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=True
    )
    assert shared is not None and shared.root == (tmp_path / "data" / "agents" / "plain" / "workspace").resolve()


def test_private_root_through_a_link_out_of_the_state_root_is_refused(tmp_path):
    config = Config(agents={"buddy": AgentConfig(display_name="B", private=AgentPrivateConfig(per="user"))})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    state = private_state_root(paths.storage_root, "user", "@alice:hs", "buddy")
    state.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (state / "buddy_data").symlink_to(tmp_path / "outside")

    with pytest.raises(ValueError, match="leads out"):
        resolve_agent_workspace_from_state_path(
            "buddy", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=True
        )
    # The turn's path to the copy (file tools, context files, MEMORY.md) holds the same line.
    with pytest.raises(ValueError, match="leads out"):
        requester_workspace(paths.storage_root, "buddy", config.agents["buddy"].private, "@alice:hs")


def test_private_root_below_a_folder_turned_link_is_refused_on_the_turns_path(tmp_path):
    private = AgentPrivateConfig(per="user", root="notes/inner")
    storage = tmp_path / "data"
    state = private_state_root(storage, "user", "@alice:hs", "buddy")
    state.mkdir(parents=True)
    (tmp_path / "outside" / "inner").mkdir(parents=True)
    (state / "notes").symlink_to(tmp_path / "outside")  # the leaf itself is a folder, its parent a link

    with pytest.raises(ValueError, match=r"private\.root"):
        requester_workspace(storage, "buddy", private, "@alice:hs")
    (state / "notes").unlink()
    (state / "notes" / "inner").mkdir(parents=True)
    assert requester_workspace(storage, "buddy", private, "@alice:hs") == (state / "notes" / "inner").resolve()


@pytest.mark.parametrize(
    "template_dir", [".", "mindroom_data", "mindroom_data/crypto", "seed/../mindroom_data", "link"]
)
def test_private_template_in_or_around_the_data_directory_is_refused(tmp_path, template_dir):
    data = tmp_path / "mindroom_data"
    (data / "crypto").mkdir(parents=True)
    (data / "api_key").write_text("sk-data-dir-secret\n", encoding="utf-8")
    (tmp_path / "seed").mkdir()
    (tmp_path / "link").symlink_to(data / "crypto")
    private = AgentPrivateConfig(per="user", template_dir=template_dir)
    config = Config(agents={"buddy": AgentConfig(display_name="Buddy", private=private)})
    paths = RuntimePaths(tmp_path / "config.yaml", data, {})
    state = private_state_root(paths.storage_root, "user", "@alice:hs", "buddy")

    with pytest.raises(ValueError, match=r"agents\.buddy\.private\.template_dir: .* the data directory"):
        resolve_agent_workspace_from_state_path(
            "buddy", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=True, create=True
        )
    assert not state.exists()


def test_private_template_named_like_the_data_directory_is_copied(tmp_path):
    data = tmp_path / "mindroom_data"
    data.mkdir()
    (tmp_path / "mindroom_data_seed").mkdir()  # a near miss: the data directory's name is only its prefix
    (tmp_path / "mindroom_data_seed" / "SOUL.md").write_text("hello", encoding="utf-8")
    private = AgentPrivateConfig(per="user", template_dir="mindroom_data_seed")
    config = Config(agents={"buddy": AgentConfig(display_name="Buddy", private=private)})
    paths = RuntimePaths(tmp_path / "config.yaml", data, {})
    state = private_state_root(paths.storage_root, "user", "@alice:hs", "buddy")

    resolve_agent_workspace_from_state_path(
        "buddy", config, runtime_paths=paths, state_storage_path=state, use_state_storage_path=True, create=True
    )

    assert (state / "buddy_data" / "SOUL.md").read_text(encoding="utf-8") == "hello"
