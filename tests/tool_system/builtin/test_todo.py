"""The `todo` tool: one work plan per conversation (room and thread), kept privately under the data directory;
dependencies, cycles, templates, and work given only to agents the person may talk to there."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.builtin.todo import add_todo, list_todos, plan, todo_tools, update_todo
from mindroom.tool_system.builtin.todo_store import todos_path
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError

CONFIG = Config.model_validate(
    {"agents": {name: {"display_name": name.title(), "tools": ["todo"]} for name in ("helper", "writer", "vault")}}
)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[Path]:
    rooms = SimpleNamespace(may_reach=lambda user, room, agent: agent != "vault")
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(rooms=rooms))  # type: ignore[arg-type]
    yield tmp_path
    withdraw()


def turn(storage: Path, thread: str | None = "$t1", agent: str = "helper"):
    paths = RuntimePaths(storage / "config.yaml", storage, {})
    context = ToolRuntimeContext(None, agent, "!r:hs", thread, "@alice:hs", config=CONFIG, runtime_paths=paths)
    return bind_runtime_context(context)


def ids(text: str) -> list[str]:
    return [part.split("`")[1] for part in text.splitlines() if "`" in part]


def test_todo_plans_and_lists_by_priority_and_dependency(storage: Path):
    with turn(storage):
        created = plan("1. Write the draft\n- [high] Check the facts\n\n[low] Tidy up")
        draft, facts, tidy = ids(created)
        review = add_todo("Review", depends_on=f"{draft}, {facts}", assigned_agent="writer")
        listed = list_todos()
        done = update_todo(draft, status="done")
        update_todo(facts, status="cancelled")
        freed = list_todos(show_all=True)

    assert created.startswith("Created 3 item(s)")
    assert "assigned to writer" in review
    lines = listed.splitlines()
    assert lines[0] == "Work plan: 0/4 complete."
    assert [line.split("`")[1] for line in lines if line.startswith("- ") and "waiting" not in line] == [
        facts,
        draft,
        tidy,
    ]
    assert "waiting on" in listed
    assert "Now unblocked" not in done  # the review still waits on the facts
    assert "Work plan: 2/4 complete." in freed and "@writer" in freed and "done `" in freed


def test_todo_plans_are_per_conversation_and_private(storage: Path):
    with turn(storage, thread="$t1"):
        plan("one")
    with turn(storage, thread="$t2"):
        assert list_todos() == "No items in this conversation's work plan."
    path = todos_path(storage, "!r:hs", "$t1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [item["title"] for item in json.loads(path.read_text())["items"]] == ["one"]


def test_todo_refuses_cycles_unknown_items_and_agents_out_of_reach(storage: Path):
    with turn(storage):
        first, second = ids(plan("a\nb"))
        update_todo(second, depends_on=first)
        assert update_todo(first, depends_on=second) == f"Adding dependency `{second}` would create a cycle."
        assert update_todo(first, depends_on=first) == "Cannot depend on itself."
        assert add_todo("c", depends_on="zzzzzz") == "Dependency `zzzzzz` not found."
        assert add_todo("d", assigned_agent="ghost").startswith("Unknown agent 'ghost'")
        assert "not allowed to reply to you" in add_todo("e", assigned_agent="vault")
        assert "not allowed to reply to you" in update_todo(first, assigned_agent="vault")
        assert update_todo("nope", status="done") == "Todo `nope` not found."
        assert update_todo(first, priority="urgent").startswith("Invalid priority")
        with pytest.raises(ToolError, match="empty"):
            add_todo("   ")
    with turn(storage):
        assert len(ids(list_todos(show_all=True))) == 2


def test_todo_templates_come_from_the_workspace(storage: Path, tmp_path: Path):
    workspace = tmp_path / "workspace"
    (workspace / "todo" / "templates").mkdir(parents=True)
    (workspace / "todo" / "templates" / "release.yaml").write_text(
        "description: Ship a release\nparams: {VERSION: ''}\n"
        "todos:\n  - title: 'Tag {{ VERSION }}'\n    priority: high\n"
        "  - title: 'Announce {{VERSION}}'\n    depends_on: [1]\n    assigned_agent: writer\n"
    )
    (workspace / "todo" / "templates" / "escape.yaml").symlink_to("/etc/passwd")
    tools = {spec.name: spec.function for spec in todo_tools(AgentToolEnvironment("helper", workspace))}
    with turn(storage):
        listing = tools["list_templates"]()
        preview = tools["apply_template"]("release", {"VERSION": "1.2"}, dry_run=True)
        applied = tools["apply_template"]("release", {"VERSION": "1.2"})
        with pytest.raises(ToolError, match="needs the parameters"):
            tools["apply_template"]("release", {})
        with pytest.raises(ToolError, match="no parameters"):
            tools["apply_template"]("release", {"VERSION": "1", "EXTRA": "x"})
        with pytest.raises(ToolError, match="cannot be read"):
            tools["apply_template"]("escape", {})
        listed = list_todos()

    assert "| `release` | 1 | Ship a release | VERSION |" in listing and "escape" not in listing
    assert "1. Tag 1.2" in preview and "2. Announce 1.2" in preview
    tag, announce = ids(applied.split("Created")[1])
    assert f"`{announce}` Announce 1.2" in listed and f"waiting on `{tag}`" in listed
