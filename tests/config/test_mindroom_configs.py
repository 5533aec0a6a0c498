"""Configs shaped as MindRoom's docs write them (`mindroom_configs/`) pass the start check here: no error, and
each warning names its key (a key accepted and not used, a tool that cannot run on this machine)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from mindroom.config.mindroom_keys import child_pattern, mindroom_keys_under
from mindroom.constants import RuntimePaths
from mindroom.daemon.start_check import check_start

CONFIGS = Path(__file__).with_name("mindroom_configs")
NAMES = sorted(path.name for path in CONFIGS.glob("*.yaml"))
_KEY_PATH = re.compile(r"^[a-z_]+(\.[A-Za-z0-9_*-]+|\[\d+\])+( \(line \d+\))?: ")

NOTICED = {
    "developer_and_companion.yaml": {"agents.DevBot.cheap_model"},
    "getting_started.yaml": set(),
    "memory_and_knowledge.yaml": {"memory.team_reads_member_memory"},
    "teams_and_rooms.yaml": set(),
    "tools_and_mcp.yaml": set(),
}


def _checked(tmp_path: Path, name: str, text: str | None = None):
    path = tmp_path / "config.yaml"
    if text is None:
        shutil.copyfile(CONFIGS / name, path)
    else:
        path.write_text(text, encoding="utf-8")
    return check_start(RuntimePaths(config_path=path, storage_root=tmp_path / "data", env_values={}))


def _not_mindroom_keys(node: object, pattern: str = "", where: str = "") -> list[str]:
    """Keys of `node` that MindRoom's config does not have (a tool entry's settings are the toolkit's)."""
    if isinstance(node, list):
        inner = child_pattern(pattern, 0)
        return [
            found
            for index, item in enumerate(node)
            if inner
            for found in _not_mindroom_keys(item, inner, f"{where}[{index}]")
        ]
    has_keys = bool(mindroom_keys_under(pattern)) or child_pattern(pattern, "\x00") is not None
    if not isinstance(node, dict) or not has_keys or pattern.endswith("tools[]"):
        return []
    found = []
    for key, value in node.items():
        child = child_pattern(pattern, str(key))
        path = f"{where}.{key}" if where else str(key)
        found += [path] if child is None else _not_mindroom_keys(value, child, path)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_mindroom_config_has_only_mindroom_s_keys(name: str):
    document = yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8"))

    assert _not_mindroom_keys(document) == []
    assert _not_mindroom_keys({"authorization": {"global_users": []}, "rooms": {"a": {"thread_mode": "room"}}}) == [
        "authorization.global_users",
        "rooms.a.thread_mode",
    ]


def test_mindroom_configs_are_the_five_shapes():
    assert sorted(NOTICED) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_mindroom_config_starts_here_with_each_warning_naming_its_key(tmp_path: Path, name: str):
    checked = _checked(tmp_path, name)

    assert [str(error) for error in checked.errors] == []
    assert checked.build is not None
    for warning in checked.warnings:
        assert _KEY_PATH.match(warning.text), warning.text
    noticed = {finding.text.split(" ", 1)[0].rstrip(":") for finding in checked.warnings if finding.topic == "notice"}
    assert noticed == NOTICED[name]


def test_mindroom_configs_keep_the_names_and_keys_as_written(tmp_path: Path):
    config = _checked(tmp_path, "teams_and_rooms.yaml").config
    assert config is not None

    assert sorted(config.agents) == ["Critic", "Planner"]
    assert config.teams["Crew"].agents == ["Planner", "Critic"]
    assert config.settings_for("Planner").timezone == "America/New_York"
    assert config.settings_for("Critic").timezone == "Asia/Tokyo"
    assert config.settings_for("Planner").num_history_messages == 6
    assert config.rooms["studio"].display_name == "The Studio"
    assert config.models["deep"].display_name == "Deep thinker"


@pytest.mark.parametrize(
    ("name", "old", "new", "problem"),
    [
        ("getting_started.yaml", "timezone: Europe/Lisbon", "timezon: Europe/Lisbon", "timezon (line "),
        ("teams_and_rooms.yaml", "    thread_mode: thread", "    thread_modes: thread", "thread_modes (line "),
        ("tools_and_mcp.yaml", "      - website\n", "      - websites\n", "unknown tool 'websites'"),
        ("memory_and_knowledge.yaml", "  backend: mem0", "  backend: mem1", "memory.backend (line "),
    ],
)
def test_mindroom_configs_one_letter_off_is_still_an_error(tmp_path: Path, name: str, old: str, new: str, problem: str):
    text = (CONFIGS / name).read_text(encoding="utf-8")
    assert old in text

    checked = _checked(tmp_path, name, text.replace(old, new, 1))

    assert any(problem in str(error) for error in checked.errors), [str(error) for error in checked.errors]
