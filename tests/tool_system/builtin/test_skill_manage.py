"""`skill_manage`: skills written into the agent's own workspace only, never through a link or with a credential,
each replaced or removed file kept under skills/.history/."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.tool_system.builtin.skill_manage import skill_manage_tools
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError

SKILL = "---\nname: tides\ndescription: Use when asked about tides.\n---\nRead the tide table first.\n"


def tool(workspace: Path):
    (spec,) = skill_manage_tools(AgentToolEnvironment("helper", workspace))
    return spec.function


def test_skill_manage_creates_patches_and_keeps_history(tmp_path: Path):
    skill_manage = tool(tmp_path / "ws")
    skill_manage("create", "tides", content=SKILL)
    skill_manage("patch", "tides", old_string="first", new_string="twice")
    skill_manage("write_file", "tides", file_path="references/ports.md", file_content="Harbour: 14:32")
    skill_manage("remove_file", "tides", file_path="references/ports.md")

    folder = tmp_path / "ws" / "skills" / "tides"
    assert (folder / "SKILL.md").read_text() == SKILL.replace("first", "twice")
    assert not (folder / "references" / "ports.md").exists()
    kept = sorted(path.name.split(".")[0] for path in (tmp_path / "ws" / "skills" / ".history").rglob("*.*"))
    assert kept == ["SKILL", "ports"]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"action": "create", "name": "tides", "content": "no front matter"}, "front matter"),
        ({"action": "create", "name": "tides", "content": SKILL.replace("name: tides", "name: other")}, "front matter"),
        ({"action": "create", "name": "Tides", "content": SKILL}, "lowercase"),
        ({"action": "write_file", "name": "tides", "file_path": "../../escape.md", "file_content": "x"}, "inside"),
        ({"action": "write_file", "name": "tides", "file_path": "/etc/x", "file_content": "x"}, "inside"),
        (
            {
                "action": "write_file",
                "name": "tides",
                "file_path": "k.md",
                "file_content": "key: sk-abcdefghijklmnopqrstuvwxyz123456",
            },
            "credential",
        ),
    ],
)
def test_skill_manage_refuses_what_would_leave_the_skill_or_keep_a_secret(tmp_path: Path, arguments, why):
    with pytest.raises(ToolError, match=why):
        tool(tmp_path / "ws")(**arguments)
    assert not (tmp_path / "escape.md").exists() and not (tmp_path / "ws" / "skills" / "tides" / "k.md").exists()


def test_skill_manage_never_writes_through_a_link(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ws" / "skills").mkdir(parents=True)
    (tmp_path / "ws" / "skills" / "tides").symlink_to(outside)

    with pytest.raises(ToolError):
        tool(tmp_path / "ws")("create", "tides", content=SKILL)
    assert list(outside.iterdir()) == []
