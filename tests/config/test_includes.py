"""MindRoom's file tags in `config.yaml` (`!include`, `!expand`, `!include_text`, the folder tags): a config split
across files loads as one, and a path that leaves the config's folder, hides, or loops is refused by name."""

from __future__ import annotations

import itertools
import os

import pytest

from mindroom.config import load_config
from mindroom.config.environment import daemon_environment
from mindroom.errors import ConfigError

MODELS = "models:\n  default: {provider: openai, id: m}\n"


def _write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder / "config.yaml"


def test_includes_agents_file_rooms_expanded_and_instructions_as_text(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "agents: !include agents/main.yaml\n",
            "agents/main.yaml": (
                "Helper:\n  display_name: Helper\n  instructions: [!include_text ../prompts/helper.md]\n"
                "  rooms: [lobby, !expand ../rooms.yaml, desk]\n"
            ),
            "rooms.yaml": "- lab\n- lab\n- garden\n",
            "prompts/helper.md": "Answer briefly.\nCite sources.\n",
        },
    )

    config = load_config(path, env={})

    helper = config.agents["Helper"]
    assert helper.rooms == ["lobby", "lab", "lab", "garden", "desk"]
    assert helper.instructions == ["Answer briefly.\nCite sources."]


def test_includes_folder_tags(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "agents: !include_dir_named agents\nrooms: !include_dir_merge_named rooms\n",
            "agents/coder.yaml": "display_name: Coder\n",
            "agents/team/writer.yml": "display_name: Writer\n",
            "agents/_draft.yaml": "display_name: Draft\n",
            "agents/.hidden.yaml": "display_name: Hidden\n",
            "agents/notes.yaml.bak": "display_name: Backup\n",
            "rooms/a.yaml": "lobby: {description: Hall}\n",
            "rooms/b.yaml": "lab: {description: Bench}\n",
        },
    )

    config = load_config(path, env={})

    assert sorted(config.agents) == ["coder", "writer"]
    assert {key: room.description for key, room in config.rooms.items()} == {"lobby": "Hall", "lab": "Bench"}


def test_includes_merge_list_and_dir_list(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "agents:\n  a: {display_name: A, rooms: !include_dir_merge_list rooms}\n"
            "authorization: {global_users: !include_dir_list people}\n",
            "rooms/1.yaml": "[one, two]\n",
            "rooms/2.yaml": "[three]\n",
            "people/a.yaml": "'@ann:example.org'\n",
            "people/b.yaml": "'@bob:example.org'\n",
        },
    )

    config = load_config(path, env={})

    assert config.agents["a"].rooms == ["one", "two", "three"]
    assert config.authorization.global_users == ["@ann:example.org", "@bob:example.org"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("agents: !include ../outside.yaml", "outside the config's folder"),
        ("agents: !include sub/../../outside.yaml", "outside the config's folder"),
        ("agents: !include .env", "hidden part"),
        ("agents: !include secrets/.tokens/agents.yaml", "hidden part"),
        ("agents: !include /etc/passwd", "absolute"),
        ("agents: !include missing.yaml", "no such file"),
        ("agents: !include_dir_named missing", "no such folder"),
        ("agents: !expand list.yaml", "only a list item"),
        ("agents: !include {a: 1}", "needs a path"),
    ],
)
def test_includes_refused_paths_name_the_tag_and_line(tmp_path, line, problem):
    (tmp_path / "outside.yaml").write_text("a: {display_name: A}\n", encoding="utf-8")
    folder = tmp_path / "conf"
    path = _write(folder, {"config.yaml": MODELS + line + "\n", ".env": "A=1\n", "list.yaml": "[]\n"})

    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})

    text = str(caught.value)
    assert problem in text
    assert "line 3" in text


def test_includes_a_link_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "secret.yaml").write_text("a: {display_name: A}\n", encoding="utf-8")
    folder = tmp_path / "conf"
    path = _write(folder, {"config.yaml": MODELS + "agents: !include_dir_named agents\n"})
    (folder / "agents").mkdir()
    os.symlink(tmp_path / "secret.yaml", folder / "agents" / "a.yaml")

    with pytest.raises(ConfigError, match="outside the config's folder"):
        load_config(path, env={})


def test_includes_a_loop_is_refused(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "agents: !include a.yaml\n",
            "a.yaml": "x: !include b.yaml\n",
            "b.yaml": "!include a.yaml\n",
        },
    )

    with pytest.raises(ConfigError, match=r"include each other: config.yaml -> a.yaml -> b.yaml -> a.yaml"):
        load_config(path, env={})


def test_includes_expand_needs_a_list(tmp_path):
    path = _write(
        tmp_path,
        {"config.yaml": MODELS + "agents:\n  a: {display_name: A, rooms: [!expand r.yaml]}\n", "r.yaml": "x: 1\n"},
    )

    with pytest.raises(ConfigError, match=r"line 4: !expand: r.yaml holds no YAML list"):
        load_config(path, env={})


def test_includes_a_wrong_key_inside_is_reported_at_the_tag_line(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "\nagents: !include agents.yaml\n",
            "agents.yaml": "a: {display_name: A, colour: red}\n",
        },
    )

    with pytest.raises(ConfigError, match=r"agents\.a\.colour \(line 4\)"):
        load_config(path, env={})


def test_includes_a_name_twice_across_merged_files_is_an_error(tmp_path):
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "rooms: !include_dir_merge_named rooms\n",
            "rooms/a.yaml": "lobby: {description: One}\n",
            "rooms/b.yaml": "lobby: {description: Two}\n",
        },
    )

    with pytest.raises(ConfigError, match=r"'lobby' comes from both rooms/a.yaml and rooms/b.yaml"):
        load_config(path, env={})


def test_includes_aliases_in_an_included_file_count_against_the_caps(tmp_path):
    names = "abcdefghi"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{name}: &{name} [{', '.join([f'*{before}'] * 10)}]\n" for before, name in itertools.pairwise(names)
    )
    path = _write(tmp_path, {"config.yaml": MODELS + "plugins: !include bomb.yaml\n", "bomb.yaml": bomb})

    with pytest.raises(ConfigError, match="anchors and aliases expand"):
        load_config(path, env={})


HELPER = "agents:\n  Helper:\n    display_name: Helper\n    instructions: [!include_text {}]\n"


def _secrets(folder, name="mindroom_data"):
    data = folder / name
    (data / "crypto").mkdir(parents=True, exist_ok=True)
    (data / "api_key").write_text("sk-data-dir-secret\n", encoding="utf-8")
    (data / "crypto" / "store.yaml").write_text("Leak: {display_name: sk-data-dir-secret}\n", encoding="utf-8")
    return data


@pytest.mark.parametrize(
    "target", ["mindroom_data/api_key", "./mindroom_data/api_key", "prompts/../mindroom_data/api_key"]
)
def test_includes_the_data_directory_is_refused_naming_file_and_key(tmp_path, target):
    _secrets(tmp_path)
    path = _write(tmp_path, {"config.yaml": MODELS + HELPER.format(target), "prompts/x.txt": "x\n"})

    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})

    text = str(caught.value)
    assert "config.yaml line 6: !include_text: agents.Helper.instructions[0]:" in text
    assert "data directory" in text
    assert "sk-data-dir-secret" not in text


def test_includes_a_link_into_the_data_directory_is_refused(tmp_path):
    _secrets(tmp_path)
    path = _write(tmp_path, {"config.yaml": MODELS + HELPER.format("prompts/helper.md")})
    (tmp_path / "prompts").mkdir()
    os.symlink(tmp_path / "mindroom_data" / "api_key", tmp_path / "prompts" / "helper.md")

    with pytest.raises(ConfigError, match=r"'prompts/helper.md' resolves into the daemon's data directory"):
        load_config(path, env={})


def test_includes_a_nested_include_or_folder_into_the_data_directory_is_refused(tmp_path):
    _secrets(tmp_path)
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS + "agents: !include agents.yaml\n",
            "agents.yaml": "Helper: {display_name: H, instructions: [!include_text mindroom_data/api_key]}\n",
        },
    )
    with pytest.raises(ConfigError, match=r"agents.yaml line 1: !include_text: agents.Helper.instructions\[0\]"):
        load_config(path, env={})

    path.write_text(MODELS + "agents: !include_dir_merge_named mindroom_data/crypto\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agents: 'mindroom_data/crypto' resolves into the daemon's data"):
        load_config(path, env={})

    (tmp_path / "agents").mkdir()
    os.symlink(tmp_path / "mindroom_data" / "crypto" / "store.yaml", tmp_path / "agents" / "leak.yaml")
    path.write_text(MODELS + "agents: !include_dir_merge_named agents\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'agents/leak.yaml' resolves into the daemon's data directory"):
        load_config(path, env={})


def test_includes_near_the_data_directory_still_work(tmp_path):
    _secrets(tmp_path)
    path = _write(
        tmp_path,
        {
            "config.yaml": MODELS
            + "agents:\n  Helper:\n    display_name: Helper\n"
            + "    instructions:\n      - !include_text mindroom_data_notes/x.txt\n"
            + "      - !include_text ./mindroom_data/../prompts/x.txt\n",
            "mindroom_data_notes/x.txt": "Notes beside the data.\n",
            "prompts/x.txt": "A prompt.\n",
        },
    )

    config = load_config(path, env={})

    assert config.agents["Helper"].instructions == ["Notes beside the data.", "A prompt."]
    assert (tmp_path / "prompts" / "x.txt").resolve() in config.included_paths


def test_includes_follow_a_data_directory_configured_elsewhere(tmp_path):
    _secrets(tmp_path)
    _secrets(tmp_path, "state")
    path = _write(tmp_path, {"config.yaml": MODELS + HELPER.format("mindroom_data/api_key")})

    # The data directory is `state/`: `mindroom_data/` is an ordinary folder then.
    config = load_config(path, env={"MINDROOM_STORAGE_PATH": str(tmp_path / "state")})
    assert config.agents["Helper"].instructions == ["sk-data-dir-secret"]

    path.write_text(MODELS + HELPER.format("state/api_key"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'state/api_key' resolves into the daemon's data directory"):
        load_config(path, env={"MINDROOM_STORAGE_PATH": str(tmp_path / "state")})


def test_includes_refuse_the_data_directory_given_on_the_command_line(tmp_path):
    _secrets(tmp_path, "elsewhere")
    path = _write(tmp_path, {"config.yaml": MODELS + HELPER.format("elsewhere/api_key")})

    environment = daemon_environment(path, tmp_path / "elsewhere")

    with pytest.raises(ConfigError, match=r"'elsewhere/api_key' resolves into the daemon's data directory"):
        load_config(path, env=environment.values)
