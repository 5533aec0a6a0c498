"""The tool catalogue: built-in and plugin tools by name, per-agent filtering, and clashes as startup errors."""

import json
import textwrap

import pytest

from mindroom.ai.tools import foreign_tool_specs
from mindroom.config.main import Config
from mindroom.plugins.loader import load_plugin_dir
from mindroom.plugins.skills import SkillError, build_skill_catalog
from mindroom.tool_system import isolation
from mindroom.tool_system.builtin.groups import GROUP_FUNCTIONS
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.catalog import ToolCatalog, ToolCatalogError, build_tool_catalog, plugin_tool_specs
from mindroom.tool_system.spec import AgentToolEnvironment

PLAIN_TOOLS = '''
import json as _json
from pathlib import Path
from mindroom.hooks import hook

LIMIT = 3

def lookup_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"

async def forecast(city: str, days: int = 3) -> str:
    """Forecast for a city."""
    return f"{days} days of sun in {city}"

def _helper():
    return "private"

class Client:
    pass

@hook("message:received")
async def not_a_tool(ctx):
    pass
'''

AGNO_TOOLS = '''
from agno.tools import Toolkit, tool

class Notes(Toolkit):
    def __init__(self):
        super().__init__(name="notes", tools=[self.add_note, self.count_notes])
        self.notes = []

    def add_note(self, text: str) -> str:
        """Add a note."""
        self.notes.append(text)
        return "added"

    async def count_notes(self) -> int:
        """How many notes there are."""
        return len(self.notes)

notes = Notes()

@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()
'''


def make_plugin(root, name, tools_source, *, exported=None, skills=None):
    folder = root / name
    folder.mkdir(parents=True)
    manifest = {"name": name, "tools_module": "tools.py", "skills": list(skills or {})}
    (folder / "mindroom.plugin.json").write_text(json.dumps(manifest))
    source = textwrap.dedent(tools_source)
    if exported is not None:
        source += f"\n__all__ = {exported!r}\n"
    (folder / "tools.py").write_text(source)
    for skill_dir, text in (skills or {}).items():
        (folder / skill_dir).mkdir(parents=True, exist_ok=True)
        (folder / skill_dir / "SKILL.md").write_text(text)
    return load_plugin_dir(folder)


def config(**agents):
    return Config.model_validate(
        {"agents": {name: {"display_name": name, "tools": tools} for name, tools in agents.items()}}
    )


def env(tmp_path):
    return AgentToolEnvironment("helper", tmp_path / "ws")


def test_plugin_tools_are_its_public_functions_not_hooks_helpers_or_imports(tmp_path):
    plugin = make_plugin(tmp_path, "weather", PLAIN_TOOLS)

    specs = plugin_tool_specs(plugin)

    assert [(spec.name, spec.in_thread) for spec in specs] == [("lookup_weather", True), ("forecast", False)]


def test_plugin_tools_respect_dunder_all(tmp_path):
    plugin = make_plugin(tmp_path, "weather", PLAIN_TOOLS, exported=["forecast"])

    assert [spec.name for spec in plugin_tool_specs(plugin)] == ["forecast"]


def test_plugin_agno_toolkits_and_functions_become_tools(tmp_path):
    plugin = make_plugin(tmp_path, "notes", AGNO_TOOLS)

    specs = {spec.name: spec for spec in plugin_tool_specs(plugin, foreign_tool_specs)}

    assert sorted(specs) == ["add_note", "count_notes", "shout"]
    assert specs["add_note"].description == "Add a note."
    assert specs["add_note"].parameters["properties"]["text"]["type"] == "string"
    assert specs["add_note"].in_thread is True and specs["count_notes"].in_thread is False
    assert specs["shout"].function(text="hi") == "HI"


def test_agno_function_needing_framework_parameters_is_a_catalogue_error(tmp_path):
    source = '''
    from agno.tools import tool

    @tool
    def whoami(agent, run_context, images) -> str:
        """Who is calling."""
        return agent.name
    '''
    plugin = make_plugin(tmp_path, "needy", source)

    # agno's `agent` and `team` are given; what else it injects is not
    with pytest.raises(ToolCatalogError, match=r"plugin 'needy'.*framework parameters \(images, run_context\)"):
        build_tool_catalog(config(), [plugin], adapt=foreign_tool_specs)


def test_catalog_filters_each_agent_to_exactly_its_list(tmp_path):
    weather = make_plugin(tmp_path, "weather", PLAIN_TOOLS)
    catalog = build_tool_catalog(config(a=["file"], b=["weather", "calculate"], c=["read_file", "forecast"]), [weather])

    assert catalog.selection(["file"]) == ("read_file", "write_file", "list_files")
    assert catalog.selection(["weather", "calculate"]) == ("lookup_weather", "forecast", "calculate")
    assert catalog.selection(["read_file", "forecast", "file"]) == ("read_file", "forecast", "write_file", "list_files")
    assert catalog.selection([]) == ()
    names = [spec.name for spec in catalog.tools_for(["read_file", "forecast"], env(tmp_path))]
    assert names == ["read_file", "forecast"]
    assert [spec.name for spec in catalog.tools_for(["calculator", "shell", "matrix"], env(tmp_path))] == [
        "calculate",
        "run_shell_command",
        "send_matrix_message",
    ]


def test_catalog_builtin_has_every_builtin_group():
    catalog = ToolCatalog.builtin()

    assert list(catalog.providers) == ["calculator", "file", "shell", "matrix", "attachments", *GROUP_FUNCTIONS]
    assert catalog.unknown(["file", "nope", "calculate"]) == ["nope"]


def test_catalog_tool_name_two_plugins_define_is_an_error_only_for_an_agent_with_both(tmp_path):
    first = make_plugin(tmp_path, "weather", PLAIN_TOOLS)
    second = make_plugin(tmp_path, "weather-two", "def forecast(city: str) -> str:\n    return city\n")

    catalog = build_tool_catalog(config(one=["weather"], two=["weather-two"]), [first, second])
    with pytest.raises(ToolCatalogError) as both:
        build_tool_catalog(config(one=["weather"], greedy=["weather-two", "weather"]), [first, second])
    with pytest.raises(ToolCatalogError) as alone:
        build_tool_catalog(config(vague=["forecast"]), [first, second])

    assert catalog.shared_names == {"forecast": ("weather", "weather-two")}
    assert [spec.function("Oslo") for spec in catalog.tools_for(["weather-two"], env(tmp_path))] == ["Oslo"]
    assert both.value.problems == [
        "agents.greedy.tools: tool 'forecast' is defined by plugin 'weather' and by plugin 'weather-two': take one"
    ]
    assert alone.value.problems == [
        "agents.vague.tools: 'forecast' is a tool of plugin 'weather' and plugin 'weather-two': "
        "name the one whose tools the agent gets"
    ]


def test_catalog_plugin_tool_named_as_a_builtin_tool_is_for_an_agent_without_that_group(tmp_path):
    plugin = make_plugin(tmp_path, "legacy", "def read_file(path):\n    return 'legacy'\n")

    catalog = build_tool_catalog(config(old=["legacy"], new=["file"]), [plugin])
    with pytest.raises(ToolCatalogError, match=r"agents\.both\.tools: tool 'read_file' is defined by plugin 'legacy'"):
        build_tool_catalog(config(both=["file", "legacy"]), [plugin])

    [legacy] = catalog.tools_for(["legacy"], env(tmp_path))
    assert legacy.function("x") == "legacy" and legacy.toolkit == "legacy"
    assert [spec.toolkit for spec in catalog.tools_for(["file"], env(tmp_path))] == ["file"] * len(
        catalog.providers["file"].tool_names
    )


def test_catalog_plugin_named_like_a_builtin_group_or_tool_is_an_error(tmp_path):
    shell = make_plugin(tmp_path, "shell", "def my_shell(x):\n    return x\n")
    tool_named_like_group = make_plugin(tmp_path, "odd", "def calculator(x):\n    return x\n")

    with pytest.raises(ToolCatalogError) as caught:
        build_tool_catalog(config(), [shell, tool_named_like_group])

    text = str(caught.value)
    assert "plugin 'shell' has the same name as built-in group 'shell'" in text
    assert "tool 'calculator' of plugin 'odd' has the name of built-in group 'calculator'" in text


def test_catalog_unknown_tool_in_agent_list_is_an_error_unless_lenient(tmp_path):
    with pytest.raises(ToolCatalogError, match=r"agents.helper.tools: unknown tool 'weather'"):
        build_tool_catalog(config(helper=["file", "weather"]), [])

    catalog = build_tool_catalog(config(helper=["file", "weather"]), [], strict=False)
    assert catalog.selection(["file", "weather"]) == ("read_file", "write_file", "list_files")


def test_skill_catalog_unknown_skill_in_agent_list_is_an_error_unless_lenient(tmp_path):
    cfg = Config.model_validate({"agents": {"helper": {"display_name": "H", "skills": ["nope"]}}})

    with pytest.raises(SkillError, match=r"agents\.helper\.skills: unknown skill 'nope'"):
        build_skill_catalog(cfg, [])
    assert build_skill_catalog(cfg, [], strict=False).skills == {}


def test_skill_catalog_holds_the_plugins_skills(tmp_path):
    plugin = make_plugin(tmp_path, "writer", "", skills={"skills/haiku": "# Write haiku\n\nFive, seven, five."})

    catalog = build_skill_catalog(config(), [plugin])

    assert list(catalog.skills) == ["haiku"]


def test_catalog_builds_plugin_tools_as_they_are(tmp_path):
    weather = make_plugin(tmp_path, "weather", PLAIN_TOOLS)
    catalog = build_tool_catalog(config(), [weather])

    (spec,) = catalog.tools_for(["lookup_weather"], env(tmp_path))

    assert spec.function(city="Oslo") == "Sunny in Oslo"


def test_plugin_tool_with_a_reserved_parameter_name_is_a_catalogue_error(tmp_path):
    plugin = make_plugin(tmp_path, "uploads", "def upload(files: list, note: str) -> str:\n    return note\n")

    with pytest.raises(ToolCatalogError, match=r"tool 'upload' has reserved parameter names \['files'\]"):
        build_tool_catalog(config(), [plugin])


def test_reserved_parameters_cover_what_agno_injects():
    from agno.utils.schema import FRAMEWORK_INJECTED_PARAMS

    from mindroom.tool_system.spec import RESERVED_PARAMETERS

    assert set(FRAMEWORK_INJECTED_PARAMS) <= RESERVED_PARAMETERS


def test_tools_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="allowed_command"):
        Config.model_validate({"tools": {"shell": {"allowed_command": ["ls"]}}})
    with pytest.raises(ValueError, match="browser"):
        Config.model_validate({"tools": {"browser": {}}})
    parsed = Config.model_validate({"tools": {"shell": {"allowed_commands": ["ls"], "timeout_s": 5}}})
    assert parsed.tools.shell.allowed_commands == ["ls"] and parsed.tools.file.max_read_bytes == 256 * 1024


@pytest.mark.asyncio
async def test_catalog_warms_an_isolation_worker_for_agents_with_isolated_tools(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation._Shared, "pool", None)  # a pool of this test's own, not one warmed earlier
    (calculate,) = ToolCatalog.builtin().tools_for(["calculator"], env(tmp_path))
    pool = isolation.shared_pool()
    (warmed,) = pool._idle  # started by building the agent's tools, before any call

    try:
        answer = await call_tool(calculate, "helper", {"expression": "6 * 7"})
        assert answer == "42"
        assert pool._alive == {warmed}  # the call ran in that worker: no process was started for it
    finally:
        pool.close()
