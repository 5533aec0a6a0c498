"""`docs/plugins.md` states the two generations' differences and what `mindroom.plugin_api` leaves out."""

from pathlib import Path

from tests.plugin_api.test_plugin_api_surface import LEFT_OUT

DOC = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Two generations of the plugin API", 1)[-1]


def test_docs_have_the_generations_section_with_its_table():
    assert "## Two generations of the plugin API" in DOC
    header = "| difference | hooks spec | MindRoom 2026.10 | here | to get the 2026 behaviour |"
    assert header in SECTION
    after = SECTION.split(header, 1)[1].splitlines()[2:]  # past the separator line
    rows = []
    for line in after:
        if not line.startswith("| "):
            break
        rows.append(line)
    assert len(rows) >= 20
    assert all(line.count(" | ") >= 4 for line in rows)


def test_docs_name_every_left_out_helper():
    for name in LEFT_OUT:
        assert f"`{name}`" in SECTION, name


def test_docs_the_tool_environment_example_is_the_tested_one():
    assert 'ctx.unset_env("AWS_SECRET_ACCESS_KEY")' in SECTION
    assert 'ctx.set_env("GIT_TERMINAL_PROMPT", "0")' in SECTION
