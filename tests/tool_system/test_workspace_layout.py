"""Agents' workspaces in MindRoom's layout, and the move of this daemon's earlier layout into it."""

from __future__ import annotations

import os

from structlog.testing import capture_logs

from mindroom.tool_system.workspace_layout import data_root_of, move_old_workspaces, workspace_dir


def test_workspace_is_where_mindroom_keeps_it_and_its_data_root_is_found_again(tmp_path):
    workspace = workspace_dir(tmp_path, "helper")

    assert workspace == tmp_path.resolve() / "agents" / "helper" / "workspace"
    assert data_root_of(workspace) == tmp_path.resolve()
    assert data_root_of(tmp_path / "workspaces" / "helper") is None  # not the daemon's layout: nothing to hide
    assert data_root_of(tmp_path / "agents" / "helper" / "workspaces") is None  # near miss


def test_old_workspaces_move_into_place_privately_and_the_old_folder_goes(tmp_path):
    old = tmp_path / "workspaces"
    (old / "helper" / "notes").mkdir(parents=True)
    (old / "helper" / "notes" / "todo.md").write_text("buy milk")
    (old / "coder").mkdir()
    (old / "coder" / "AGENTS.md").write_text("run pytest")

    moved = move_old_workspaces(tmp_path)

    assert moved == ["coder", "helper"]
    assert (workspace_dir(tmp_path, "helper") / "notes" / "todo.md").read_text() == "buy milk"
    assert (workspace_dir(tmp_path, "coder") / "AGENTS.md").read_text() == "run pytest"
    assert not old.exists()
    assert os.stat(tmp_path / "agents" / "helper").st_mode & 0o077 == 0
    assert move_old_workspaces(tmp_path) == []  # once only


def test_a_workspace_already_in_place_wins_and_the_old_one_stays_said_in_the_log(tmp_path):
    (tmp_path / "workspaces" / "helper").mkdir(parents=True)
    (tmp_path / "workspaces" / "helper" / "old.md").write_text("old")
    workspace_dir(tmp_path, "helper").mkdir(parents=True)
    (workspace_dir(tmp_path, "helper") / "new.md").write_text("new")

    with capture_logs() as logs:
        assert move_old_workspaces(tmp_path) == []

    assert (tmp_path / "workspaces" / "helper" / "old.md").read_text() == "old"
    assert not (workspace_dir(tmp_path, "helper") / "old.md").exists()
    assert [log["agent"] for log in logs if log["event"] == "old workspace left in place"] == ["helper"]


def test_links_in_the_old_layout_are_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "workspaces").mkdir()
    (tmp_path / "workspaces" / "helper").symlink_to(elsewhere)

    assert move_old_workspaces(tmp_path) == []
    assert not workspace_dir(tmp_path, "helper").exists()

    linked = tmp_path / "linked"
    (tmp_path / "real").mkdir()
    linked.mkdir()
    (linked / "workspaces").symlink_to(tmp_path / "real")
    assert move_old_workspaces(linked) == []
