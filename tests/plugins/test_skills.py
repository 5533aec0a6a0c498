"""Skills: `SKILL.md` folders from plugins, offered only to the agents whose `skills:` list names them."""

import json

import pytest

from mindroom.plugins.loader import load_plugin_dir
from mindroom.plugins.skills import MAX_SKILL_CHARS, SkillCatalog, SkillError, parse_skill, skill_prompt


def write_skill(folder, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    return folder


def make_plugin(root, name, skills, manifest_skills=("skills",)):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": name, "skills": list(manifest_skills)}))
    for relative, text in skills.items():
        write_skill(folder / relative, text)
    return load_plugin_dir(folder)


def test_parse_skill_reads_front_matter(tmp_path):
    folder = write_skill(
        tmp_path / "release",
        "---\nname: release-notes\ndescription: Write release notes from a changelog.\n---\n# Steps\n\n1. Read.\n",
    )

    skill = parse_skill(folder, "writer")

    assert (skill.name, skill.description, skill.plugin) == (
        "release-notes",
        "Write release notes from a changelog.",
        "writer",
    )
    assert skill.instructions == "# Steps\n\n1. Read."


def test_parse_skill_without_front_matter_uses_folder_name_and_first_heading(tmp_path):
    skill = parse_skill(write_skill(tmp_path / "haiku", "Intro line.\n\n# Write a haiku\n\nFive, seven, five.\n"))

    assert (skill.name, skill.description) == ("haiku", "Write a haiku")


def test_parse_skill_falls_back_to_the_first_line(tmp_path):
    skill = parse_skill(write_skill(tmp_path / "plain", "\n\nJust do the thing.\nMore.\n"))

    assert skill.description == "Just do the thing."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: [broken\n---\nbody", "not valid YAML"),
        ("---\n- a list\n---\nbody", "must be a mapping"),
        ("---\nname: has spaces\n---\nbody", "skill name 'has spaces'"),
    ],
)
def test_parse_skill_rejects_malformed_skills(tmp_path, text, problem):
    with pytest.raises(SkillError, match=problem):
        parse_skill(write_skill(tmp_path / "bad", text))


def test_catalog_reads_skill_folders_inside_and_as_manifest_entries(tmp_path):
    plugin = make_plugin(
        tmp_path,
        "writer",
        {"skills/haiku": "# Haiku", "skills/limerick": "# Limerick", "solo": "# Solo skill"},
        manifest_skills=("skills", "solo"),
    )

    catalog = SkillCatalog.from_plugins([plugin])

    assert sorted(catalog.skills) == ["haiku", "limerick", "solo"]


def test_catalog_duplicate_skill_names_name_both_plugins(tmp_path):
    first = make_plugin(tmp_path, "one", {"skills/haiku": "# A"})
    second = make_plugin(tmp_path, "two", {"skills/haiku": "# B"})

    with pytest.raises(SkillError, match="skill 'haiku' is defined by plugin 'one' and by plugin 'two'"):
        SkillCatalog.from_plugins([first, second])


def test_agent_is_offered_only_the_skills_it_lists(tmp_path):
    plugin = make_plugin(
        tmp_path,
        "writer",
        {"skills/haiku": "# Write haiku\n\nFive, seven, five.", "skills/limerick": "# Limerick\n\nAABBA."},
    )
    catalog = SkillCatalog.from_plugins([plugin])

    (prompt,) = catalog.instructions(["haiku"])

    assert '<skill name="haiku">' in prompt and "Five, seven, five." in prompt
    assert "limerick" not in prompt.lower() and "AABBA" not in prompt
    assert catalog.instructions([]) == ()
    assert catalog.instructions(["unknown"]) == ()
    assert catalog.instructions(["haiku"]) is catalog.instructions(["haiku"])


def test_skill_prompt_truncates_very_long_skills(tmp_path):
    skill = parse_skill(write_skill(tmp_path / "long", "# Long\n" + "x" * (MAX_SKILL_CHARS + 100)))

    assert "[skill instructions truncated]" in skill_prompt([skill])
    assert skill_prompt([]) == ""
